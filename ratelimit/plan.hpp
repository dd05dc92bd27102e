#pragma once
/// \file
/// A request's plan: its descriptors found in the configuration, before Redis is asked, and the answer
/// Envoy gets once the decider (decider.hpp) has decided them. No I/O here.
///
/// Per descriptor: the limit its rule gives (or the request's own override), its cost (the descriptor's
/// hits_addend, else the request's, else 1) times the rule's weight, and its Redis key, made of the rule
/// and the descriptor's values, so that the same descriptor is the same counter in every request. A
/// descriptor no rule matches, or an unlimited one, is OK and counts nothing. Of the rules that match
/// one request, one named in another's `replaces` is left out, as envoyproxy does.

#include <ratelimit/config.hpp>
#include <ratelimit/rule.hpp>

#include <swl/decision.hpp>
#include <swl/integrations/http_headers.hpp>
#include <swl/limiter.hpp>

#include "envoy/service/ratelimit/v3/rls.pb.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::ratelimit {

namespace rls = envoy::service::ratelimit::v3;

/// One limited descriptor of a request: where it is in the request, its rule's limit in units of its
/// weight, its cost and its counter; and, once decided, its decision.
struct LimitedDescriptor {
  int index = 0;
  const Rule* rule = nullptr;  // null for a limit the request set itself (an override)
  std::int64_t requests_per_unit = 0;
  Unit unit = Unit::second;
  Limit limit;  // in units of `weight`: exact, since every hit on the counter costs a multiple of it
  std::int64_t weight = 1;
  std::int64_t hits = 1;
  bool shadow = false;
  std::string counting;  // how it is counted: "log", "gcra", or the periods of a fixed window
  std::string redis_key;
  std::string policy;  // what the RateLimit headers call it: the rule's name, else its stats key
  std::optional<Decision> decision;
};

/// A request's limited descriptors, found in the configuration, and the response they make: valid while
/// the configuration it was planned under lives.
class Plan {
 public:
  /// Finds `request`'s descriptors in `config`; their counters' keys start with `key_prefix`.
  Plan(const Configuration& config, const rls::RateLimitRequest& request, std::string_view key_prefix)
      : limited_(find(config, request, key_prefix)) {
    for (int i = 0; i < request.descriptors_size(); ++i) response_.add_statuses()->set_code(rls::RateLimitResponse::OK);
    for (const LimitedDescriptor& each : limited_) describeLimit(each, *response_.mutable_statuses(each.index));
  }

  /// Whether deciding it asks Redis: false when no descriptor is limited (none matched a rule, or
  /// every match is unlimited), and the answer is all OK at once.
  bool asksRedis() const noexcept { return !limited_.empty(); }

  /// The limited descriptors, in the request's order: what the decider decides.
  std::vector<LimitedDescriptor>& limited() noexcept { return limited_; }

  /// Envoy's answer, from the decisions made: each status, the overall code and the headers.
  rls::RateLimitResponse answer() && {
    answerOverall(limited_, response_);
    return std::move(response_);
  }

 private:
  static std::vector<LimitedDescriptor> find(const Configuration& config, const rls::RateLimitRequest& request,
                                             std::string_view prefix) {
    const std::int64_t request_hits = request.hits_addend() == 0 ? 1 : request.hits_addend();
    std::vector<LimitedDescriptor> limited;
    std::vector<DescriptorEntry> entries;
    for (int i = 0; i < request.descriptors_size(); ++i) {
      const auto& descriptor = request.descriptors(i);
      entries.clear();
      for (const auto& entry : descriptor.entries()) entries.push_back({entry.key(), entry.value()});
      LimitedDescriptor each;
      each.index = i;
      each.hits = descriptor.has_hits_addend() && descriptor.hits_addend().value() > 0
                      ? static_cast<std::int64_t>(std::min<std::uint64_t>(descriptor.hits_addend().value(),
                                                                          std::numeric_limits<std::int64_t>::max()))
                      : request_hits;
      if (descriptor.has_limit()) {
        if (!overridden(prefix, request.domain(), descriptor, entries, each)) continue;
      } else {
        each.rule = config.find(request.domain(), entries);
        if (each.rule == nullptr || each.rule->unlimited) continue;
        ruled(prefix, *each.rule, request.domain(), entries, each);
      }
      limited.push_back(std::move(each));
    }
    leaveOutReplaced(limited);
    return limited;
  }

  // A limit the request gives: counted in a log of its own unit, apart from any rule's counter.
  static bool overridden(std::string_view prefix, std::string_view domain,
                         const envoy::extensions::common::ratelimit::v3::RateLimitDescriptor& descriptor,
                         const std::vector<DescriptorEntry>& entries, LimitedDescriptor& each) {
    const auto unit = unitOf(descriptor.limit().unit());
    if (!unit || descriptor.limit().requests_per_unit() == 0) return false;  // as envoyproxy: no limit then
    each.requests_per_unit = descriptor.limit().requests_per_unit();
    each.unit = *unit;
    each.limit = Limit{each.requests_per_unit, infoOf(*unit).length};
    each.counting = "log";
    std::string name(domain);
    for (const DescriptorEntry& entry : entries) name.append(".").append(entry.key);
    each.policy = name + ".override." + std::string(infoOf(*unit).name);
    each.redis_key = counterKey(prefix, domain, each.policy, {}, entries);
    return true;
  }

  static void ruled(std::string_view prefix, const Rule& rule, std::string_view domain,
                    const std::vector<DescriptorEntry>& entries, LimitedDescriptor& each) {
    each.requests_per_unit = rule.limit.max_requests;
    each.unit = rule.unit;
    each.weight = rule.weight;
    each.shadow = rule.shadow_mode;
    each.limit = Limit{rule.limit.max_requests / rule.weight, rule.limit.window};
    std::string_view kept_as;  // none for a log, so that a log's key is the same whatever its unit
    if (rule.calendar) {
      each.counting = "calendar " + std::string(infoOf(rule.unit).name) + " " + rule.time_zone;
      kept_as = "periods";
    } else if (rule.algorithm == Algorithm::fixed_window) {
      each.counting = "fixed " + std::to_string(rule.limit.window.count());
      kept_as = "periods";
    } else if (rule.algorithm == Algorithm::gcra) {
      each.counting = "gcra";
      kept_as = "gcra";
    } else {
      each.counting = "log";
    }
    each.redis_key = counterKey(prefix, domain, rule.stats_key, kept_as, entries);
    each.policy = rule.name.empty() ? rule.stats_key : rule.name;
  }

  // "swlrl:{shop}.user:5=alice" for the rule "shop.user" kept as a log, "swlrl:{shop}.user:gcra:5=alice"
  // kept by GCRA: a rule that changes how it is kept on a reload starts a key of the right type rather
  // than fail on the old one. The domain is the hash tag, so that on a Cluster one request's counters
  // share a slot, as one script needs (the prefix holds no brace, and every key of a request starts
  // alike up to the tag's end). Length-prefixed values: no value can end early and make two
  // descriptors one key, nor be taken for how the key is kept.
  static std::string counterKey(std::string_view prefix, std::string_view domain, std::string_view name,
                                std::string_view kept_as, const std::vector<DescriptorEntry>& entries) {
    std::string key(prefix);
    key.append(":{").append(domain).append("}").append(name.substr(domain.size())).append(":");
    if (!kept_as.empty()) key.append(kept_as).append(":");
    for (const DescriptorEntry& entry : entries)
      key.append(std::to_string(entry.value.size())).append("=").append(entry.value);
    return key;
  }

  static void leaveOutReplaced(std::vector<LimitedDescriptor>& limited) {
    std::vector<std::string_view> replaced;
    for (const LimitedDescriptor& each : limited) {
      if (each.rule != nullptr) replaced.insert(replaced.end(), each.rule->replaces.begin(), each.rule->replaces.end());
    }
    if (replaced.empty()) return;
    limited.erase(std::remove_if(limited.begin(), limited.end(),
                                 [&](const LimitedDescriptor& each) {
                                   return each.rule != nullptr && !each.rule->name.empty() &&
                                          std::find(replaced.begin(), replaced.end(), each.rule->name) !=
                                              replaced.end();
                                 }),
                  limited.end());
  }

  static void describeLimit(const LimitedDescriptor& each, rls::RateLimitResponse::DescriptorStatus& status) {
    auto& limit = *status.mutable_current_limit();
    limit.set_requests_per_unit(static_cast<std::uint32_t>(
        std::min<std::int64_t>(each.requests_per_unit, std::numeric_limits<std::uint32_t>::max())));
    limit.set_unit(static_cast<rls::RateLimitResponse::RateLimit::Unit>(infoOf(each.unit).envoy_number));
    if (each.rule != nullptr) limit.set_name(each.rule->name);
  }

  static void answerOverall(const std::vector<LimitedDescriptor>& limited, rls::RateLimitResponse& response) {
    bool over = false;
    const LimitedDescriptor* binding = nullptr;
    for (const LimitedDescriptor& each : limited) {
      if (!each.decision) continue;  // never decided: another's refusal came first
      auto& status = *response.mutable_statuses(each.index);
      const Decision& decision = *each.decision;
      const bool refused = !decision.allowed && !each.shadow;
      status.set_code(refused ? rls::RateLimitResponse::OVER_LIMIT : rls::RateLimitResponse::OK);
      const std::int64_t remaining = std::max<std::int64_t>(0, decision.remaining) * each.weight;
      status.set_limit_remaining(
          static_cast<std::uint32_t>(std::min<std::int64_t>(remaining, std::numeric_limits<std::uint32_t>::max())));
      const auto until_reset = refused ? decision.retry_after : decision.reset_after;
      status.mutable_duration_until_reset()->set_seconds(until_reset.count() / 1'000'000);
      status.mutable_duration_until_reset()->set_nanos(
          static_cast<std::int32_t>(until_reset.count() % 1'000'000 * 1000));
      if (refused) {
        over = true;
        if (binding == nullptr || decision.retry_after > binding->decision->retry_after) binding = &each;
      }
    }
    response.set_overall_code(over ? rls::RateLimitResponse::OVER_LIMIT : rls::RateLimitResponse::OK);
    if (binding != nullptr) addHeader(response, "retry-after", retryAfterValue(*binding->decision));
    addRateLimitHeaders(limited, response);
  }

  // The IETF RateLimit-Policy and RateLimit fields, one policy per enforced descriptor, counted once
  // however often the request repeats it: in hits per unit, as current_limit and limit_remaining say.
  // Envoy adds them to the response, admitted or refused. A shadow rule refuses no one, so clients are
  // not told of it.
  static void addRateLimitHeaders(const std::vector<LimitedDescriptor>& limited, rls::RateLimitResponse& response) {
    std::vector<std::string> names;
    std::vector<PolicyReport> policies;
    std::vector<std::string_view> counters;
    names.reserve(limited.size());
    for (const LimitedDescriptor& each : limited) {
      if (!each.decision || each.shadow ||
          std::find(counters.begin(), counters.end(), each.redis_key) != counters.end()) {
        continue;
      }
      counters.push_back(each.redis_key);
      Decision in_hits = *each.decision;
      in_hits.remaining = std::max<std::int64_t>(0, in_hits.remaining) * each.weight;
      names.push_back(printable(each.policy));
      policies.push_back({names.back(), Limit{each.requests_per_unit, infoOf(each.unit).length}, in_hits});
    }
    if (policies.empty()) return;
    addHeader(response, "ratelimit-policy", rateLimitPolicyValue(policies));
    addHeader(response, "ratelimit", rateLimitValue(policies));
  }

  static void addHeader(rls::RateLimitResponse& response, std::string_view key, std::string value) {
    auto* header = response.add_response_headers_to_add();
    header->set_key(std::string(key));
    header->set_value(std::move(value));
  }

  // A structured field carries printable ASCII only; a configuration may name its rules in any text.
  static std::string printable(std::string text) {
    for (char& c : text) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    return text;
  }

  static std::optional<Unit> unitOf(int envoy_number) {
    for (const UnitInfo& unit : kUnits) {
      if (unit.envoy_number == envoy_number) return unit.unit;
    }
    return std::nullopt;
  }

  std::vector<LimitedDescriptor> limited_;
  rls::RateLimitResponse response_;
};

}  // namespace swl::ratelimit
