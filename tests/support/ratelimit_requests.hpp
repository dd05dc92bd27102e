#pragma once
// Envoy's ShouldRateLimit requests as its rate limit filter sends them, the rules of the domain they ask
// about, and what the tests read back from the answers: for swl-ratelimit's tests, with or without a server.

#include "envoy/service/ratelimit/v3/rls.pb.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace swl::test {

// The rules of the domain "shop" that every swl-ratelimit test counts with; a test appends the rules of
// its own (descriptor entries, indented by two), a route's or a bucket's, say.
inline constexpr const char* kShopRules = R"yaml(domain: shop
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: route
    value: /search
    rate_limit: {unit: minute, requests_per_unit: 5, name: search}
  - key: internal
    rate_limit: {unlimited: true}
  - key: trial
    rate_limit: {unit: minute, requests_per_unit: 1}
    shadow_mode: true
  - key: bulk
    rate_limit: {unit: minute, requests_per_unit: 10, weight: 5}
  - key: window
    rate_limit: {unit: hour, requests_per_unit: 2, algorithm: fixed_window}
)yaml";

namespace rls = envoy::service::ratelimit::v3;

// One descriptor's entries, (key, value) in order.
using Entries = std::vector<std::pair<std::string, std::string>>;

// A request of `descriptors` in `domain`, with the request's hits_addend (0: none).
inline rls::RateLimitRequest request(const std::vector<Entries>& descriptors, std::uint32_t hits = 0,
                                     const std::string& domain = "shop") {
  rls::RateLimitRequest request;
  request.set_domain(domain);
  request.set_hits_addend(hits);
  for (const Entries& entries : descriptors) {
    auto* descriptor = request.add_descriptors();
    for (const auto& [key, value] : entries) {
      auto* entry = descriptor->add_entries();
      entry->set_key(key);
      entry->set_value(value);
    }
  }
  return request;
}

// The value of the response header `key` the answer asks Envoy to add; empty when there is none.
inline std::string header(const rls::RateLimitResponse& response, const std::string& key) {
  for (const auto& header : response.response_headers_to_add()) {
    if (header.key() == key) return header.value();
  }
  return "";
}

inline std::int64_t microsecondsOf(const google::protobuf::Duration& duration) {
  return duration.seconds() * 1'000'000 + duration.nanos() / 1000;
}

}  // namespace swl::test
