// Envoy Gateway's own rate limit configurations, served to swl-ratelimit over xDS as Envoy Gateway serves
// them: the configurations its xDS translator generates (envoyproxy/gateway's testdata, ported to
// tests/fixtures/envoy_gateway/, one domain's RateLimitConfig each), and the descriptors the requests its
// routes' actions match produce. Each request is answered as envoyproxy/ratelimit answers it wherever a
// fixed and an exact window agree: under the rule envoyproxy's matching reaches (an exact value first,
// then the key alone), its limit's requests admitted in one call and the next unit refused at once;
// where no rule is reached, or the rule is unlimited or in shadow mode, nothing is refused.

#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_server.hpp"
#include "support/xds_server.hpp"

#include <google/protobuf/text_format.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace rls = envoy::service::ratelimit::v3;
namespace conf = ::ratelimit::config::ratelimit::v3;
using swl::test::Entries;
using swl::test::RateLimitProcess;
using swl::test::RedisServer;
using swl::test::TemporaryDirectory;
using swl::test::XdsServer;

// One ported configuration: its domains' resources, and the requests its routes make.
struct Case {
  std::string name;
  std::vector<conf::RateLimitConfig> resources;
  std::vector<std::pair<std::string, Entries>> requests;  // domain, descriptor
};

std::vector<std::string> fieldsOf(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
  return fields;
}

Case caseIn(const std::filesystem::path& file) {
  Case read{file.stem().string(), {}, {}};
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> fields = fieldsOf(line);
    if (fields.size() >= 2 && fields[0] == "resource") {
      REQUIRE(google::protobuf::TextFormat::ParseFromString(fields[1], &read.resources.emplace_back()));
    } else if (fields.size() >= 2 && fields[0] == "request") {
      Entries entries;
      for (std::size_t i = 2; i < fields.size(); ++i) {
        const std::size_t equals = fields[i].find('=');
        entries.emplace_back(fields[i].substr(0, equals), fields[i].substr(equals + 1));
      }
      read.requests.emplace_back(fields[1], entries);
    }
  }
  return read;
}

// The rule envoyproxy/ratelimit's matching reaches for `entries` in `domain`: at each level the child
// of the entry's key and value, else of its key alone; the last one's rate limit. None when an entry
// matches no child.
const conf::RateLimitDescriptor* ruleFor(const Case& ported, const std::string& domain, const Entries& entries) {
  for (const conf::RateLimitConfig& config : ported.resources) {
    if (config.domain() != domain) continue;
    const google::protobuf::RepeatedPtrField<conf::RateLimitDescriptor>* level = &config.descriptors();
    const conf::RateLimitDescriptor* reached = nullptr;
    for (const auto& [key, value] : entries) {
      const conf::RateLimitDescriptor* exact = nullptr;
      const conf::RateLimitDescriptor* any = nullptr;
      for (const conf::RateLimitDescriptor& child : *level) {
        if (child.key() == key && child.value() == value) exact = &child;
        if (child.key() == key && child.value().empty()) any = &child;
      }
      reached = exact ? exact : any;
      if (!reached) return nullptr;
      level = &reached->descriptors();
    }
    return reached && reached->has_rate_limit() ? reached : nullptr;
  }
  return nullptr;
}

std::chrono::seconds unitLength(conf::RateLimitUnit unit) {
  switch (unit) {
    case conf::SECOND:
      return std::chrono::seconds(1);
    case conf::MINUTE:
      return std::chrono::minutes(1);
    case conf::HOUR:
      return std::chrono::hours(1);
    case conf::DAY:
      return std::chrono::hours(24);
    default:
      return std::chrono::hours(24 * 7);
  }
}

// One request of `domain` for `entries`, asking `hits` units.
rls::RateLimitResponse call(RateLimitProcess& server, const std::string& domain, const Entries& entries,
                            std::uint32_t hits) {
  rls::RateLimitResponse response;
  const grpc::Status status = server.callStatus(swl::test::request({entries}, hits, domain), response);
  INFO(status.error_message());
  REQUIRE(status.ok());
  return response;
}

// The request answered as envoyproxy's, where a fixed and an exact window agree: the limit taken whole
// in one call and the next unit refused at once, under the rule's limit.
void checkAnswers(RateLimitProcess& server, const Case& ported, const std::string& domain, const Entries& entries) {
  const conf::RateLimitDescriptor* rule = ruleFor(ported, domain, entries);
  if (!rule || rule->rate_limit().unlimited() || rule->shadow_mode()) {
    for (int i = 0; i < 3; ++i) CHECK(call(server, domain, entries, 1000).overall_code() == rls::RateLimitResponse::OK);
    return;
  }
  const std::uint32_t limit = rule->rate_limit().requests_per_unit();
  const auto started = std::chrono::steady_clock::now();
  const rls::RateLimitResponse whole = call(server, domain, entries, limit);
  const rls::RateLimitResponse over = call(server, domain, entries, 1);
  if (std::chrono::steady_clock::now() - started >= unitLength(rule->rate_limit().unit())) return;  // no agreement
  CHECK(whole.overall_code() == rls::RateLimitResponse::OK);
  CHECK(over.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  REQUIRE(over.statuses_size() == 1);
  CHECK(over.statuses(0).current_limit().requests_per_unit() == limit);
  CHECK(static_cast<int>(over.statuses(0).current_limit().unit()) == static_cast<int>(rule->rate_limit().unit()));
}

}  // namespace

TEST_CASE("Envoy Gateway's generated configurations, served over xDS, answer their routes' requests as envoyproxy's") {
  std::vector<Case> cases;
  for (const auto& file : std::filesystem::directory_iterator(SWL_ENVOY_GATEWAY_FIXTURES)) {
    cases.push_back(caseIn(file.path()));
  }
  REQUIRE(cases.size() == 35);  // every configuration of envoyproxy/gateway's testdata
  TemporaryDirectory directory;
  RedisServer redis;
  XdsServer xds;
  xds.serve("0", {});
  RateLimitProcess server(directory.path() / "server.out", {},
                          {{"CONFIG_TYPE", "GRPC_XDS_SOTW"},
                           {"CONFIG_GRPC_XDS_SERVER_URL", xds.address()},
                           {"REDIS_SOCKET_TYPE", "tcp"},
                           {"REDIS_URL", "127.0.0.1:" + std::to_string(redis.port())},
                           {"GRPC_HOST", "127.0.0.1"},
                           {"GRPC_PORT", "0"},
                           {"PORT", "0"}});
  auto admin = redis.connect();
  int version = 0, requests = 0, limited = 0;
  for (const Case& ported : cases) {
    INFO(ported.name);
    admin.command({"FLUSHALL"});
    const std::string served = std::to_string(++version);
    xds.serve(served, ported.resources);
    const auto ack = xds.awaitAnswer(served);
    REQUIRE(ack);
    INFO((ack->has_error_detail() ? ack->error_detail().message() : std::string()));
    REQUIRE_FALSE(ack->has_error_detail());
    // Each route's descriptor, and beside it the same with a last value no rule names (a header's value
    // nobody configured): that one reaches the key's own rule when there is one, else none.
    std::vector<std::pair<std::string, Entries>> descriptors;
    for (const auto& [domain, entries] : ported.requests) {
      descriptors.emplace_back(domain, entries);
      Entries unnamed = entries;
      unnamed.back().second = "swl-a-value-no-rule-names";
      descriptors.emplace_back(domain, unnamed);
    }
    std::set<std::pair<std::string, Entries>> asked;  // two routes of one descriptor share its counter
    for (const auto& [domain, entries] : descriptors) {
      if (!asked.insert({domain, entries}).second) continue;
      checkAnswers(server, ported, domain, entries);
      ++requests;
      limited += ruleFor(ported, domain, entries) ? 1 : 0;
    }
  }
  std::cout << cases.size() << " configurations, " << requests << " descriptors asked, " << limited
            << " of them under a rule\n";
  CHECK(requests == 121);  // the fixtures' routes, each also with a value no rule names
  CHECK(limited == 81);    // under a rule; the other 40 reach none
}
