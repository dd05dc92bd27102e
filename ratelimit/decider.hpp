#pragma once
/// \file
/// What swl-ratelimit answers Envoy: a RateLimitRequest's descriptors found in the configuration and
/// decided together, all or nothing, in one EVALSHA (swl::MultiLimiter): no descriptor counts a request
/// that another refused, unlike envoyproxy/ratelimit, which counts every hit.
///
/// Per descriptor: the limit its rule gives (or the request's own override), its cost (the descriptor's
/// hits_addend, else the request's, else 1) times the rule's weight, and its Redis key, made of the rule
/// and the descriptor's values, so that the same descriptor is the same counter in every request. A
/// descriptor no rule matches, or an unlimited one, is OK and counts nothing; one that repeats another's
/// counter in the same request shares its decision and counts once. A shadow-mode rule that refuses is
/// reported OK and records nothing, and the others are decided again without it. Of the rules that
/// match one request, one named in another's `replaces` is left out, as envoyproxy does.
///
/// Redis's failures answer by the failure policy (open by default, as Envoy's filter expects).

#include <ratelimit/config.hpp>
#include <ratelimit/rule.hpp>

#include <swl/calendar.hpp>
#include <swl/composites/multi_limiter.hpp>
#include <swl/integrations/http_headers.hpp>
#include <swl/periods.hpp>
#include <swl/redis/client.hpp>

#include "envoy/service/ratelimit/v3/rls.pb.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::ratelimit {

namespace rls = envoy::service::ratelimit::v3;

/// What one limited descriptor of a request got, for metrics.
enum class DescriptorOutcome {
  ok,                 ///< admitted by Redis
  over_limit,         ///< refused by Redis (or never fitting its limit)
  shadow_over_limit,  ///< a shadow rule that would have refused: answered OK, recorded nothing
  failure_policy,     ///< answered by the failure policy: Redis could not decide
};

/// The name a metric gives a DescriptorOutcome.
inline const char* nameOf(DescriptorOutcome outcome) {
  static constexpr const char* names[] = {"ok", "over_limit", "shadow_over_limit", "failure_policy"};
  return names[static_cast<int>(outcome)];
}

/// How the service decides, besides its configuration.
struct DeciderOptions {
  /// What every Redis key of the service starts with.
  std::string key_prefix = "swlrl";
  /// What a request gets when Redis cannot answer: admitted (FailurePolicy::allow, Envoy's expectation)
  /// or refused (FailurePolicy::deny).
  FailurePolicy on_failure = FailurePolicy::allow;
  /// Sees each decision of its MultiLimiters (swl::PrometheusMetrics::observer(), say).
  Observer observer;
  /// Told what each limited descriptor got, under its rule's stats key ("shop.user"; "override" for a
  /// limit the request set): for metrics per rule. Called from the threads that decide.
  std::function<void(std::string_view rule, DescriptorOutcome)> on_descriptor;
};

/// The key policy of the service's MultiLimiters: the decider makes each descriptor's Redis key itself
/// (whatever slot of a MultiLimiter decides it), so the key is taken as it is.
class GivenKey {
 public:
  explicit GivenKey(const std::string& /*the slot's name*/ = {}) {}
  std::string key(std::string_view redis_key) const { return std::string(redis_key); }
};

class Decider {
 public:
  /// Decides over `redis` (a pool, a cluster, a Sentinel-watched client), which must outlive it.
  Decider(RedisClient& redis, DeciderOptions options) : redis_(&redis), options_(std::move(options)) {}

  /// The answer to `request` under `config`: plan(), then decide(). A request of more limited
  /// descriptors than one decision takes (ScriptCall::kMaxKeys) is an InvalidArgument.
  rls::RateLimitResponse decide(const Configuration& config, const rls::RateLimitRequest& request) {
    return decide(plan(config, request));
  }

 private:
  // One descriptor the request must be decided under: where it is in the request, its rule's limit
  // in units of its weight, and its counter.
  struct Limited {
    int index = 0;
    const Rule* rule = nullptr;  // null for a limit the request set itself (an override)
    std::int64_t requests_per_unit = 0;
    Unit unit = Unit::second;
    Limit limit;  // in units of `weight`: exact, since every hit on the counter costs a multiple of it
    std::int64_t weight = 1;
    std::int64_t hits = 1;
    bool shadow = false;
    std::string counting;  // how it is counted: "log", or the periods of a fixed window
    std::string redis_key;
    std::string policy;  // what the RateLimit headers call it: the rule's name, else its stats key
    std::optional<Decision> decision;
  };

 public:
  /// A request's descriptors found in the configuration, before Redis is asked: valid while the
  /// configuration it was planned under lives.
  class Plan {
   public:
    /// Whether deciding it asks Redis: false when no descriptor is limited (none matched a rule, or
    /// every match is unlimited), and the answer is all OK at once.
    bool asksRedis() const noexcept { return !limited_.empty(); }

   private:
    friend class Decider;
    std::vector<Limited> limited_;
    rls::RateLimitResponse response_;
  };

  /// Finds `request`'s descriptors in `config`: no Redis, no waiting.
  Plan plan(const Configuration& config, const rls::RateLimitRequest& request) const {
    Plan plan;
    plan.limited_ = find(config, request);
    for (int i = 0; i < request.descriptors_size(); ++i) {
      plan.response_.add_statuses()->set_code(rls::RateLimitResponse::OK);
    }
    for (const Limited& each : plan.limited_) describeLimit(each, *plan.response_.mutable_statuses(each.index));
    return plan;
  }

  /// Decides `plan`'s limited descriptors together, in Redis, and answers.
  rls::RateLimitResponse decide(Plan plan) {
    decideAll(plan.limited_);
    answerOverall(plan.limited_, plan.response_);
    if (options_.on_descriptor) report(plan.limited_);
    return std::move(plan.response_);
  }

 private:
  std::vector<Limited> find(const Configuration& config, const rls::RateLimitRequest& request) const {
    const std::int64_t request_hits = request.hits_addend() == 0 ? 1 : request.hits_addend();
    std::vector<Limited> limited;
    std::vector<DescriptorEntry> entries;
    for (int i = 0; i < request.descriptors_size(); ++i) {
      const auto& descriptor = request.descriptors(i);
      entries.clear();
      for (const auto& entry : descriptor.entries()) entries.push_back({entry.key(), entry.value()});
      Limited each;
      each.index = i;
      each.hits = descriptor.has_hits_addend() && descriptor.hits_addend().value() > 0
                      ? static_cast<std::int64_t>(std::min<std::uint64_t>(descriptor.hits_addend().value(),
                                                                          std::numeric_limits<std::int64_t>::max()))
                      : request_hits;
      if (descriptor.has_limit()) {
        if (!overridden(request.domain(), descriptor, entries, each)) continue;
      } else {
        each.rule = config.find(request.domain(), entries);
        if (each.rule == nullptr || each.rule->unlimited) continue;
        ruled(*each.rule, request.domain(), entries, each);
      }
      limited.push_back(std::move(each));
    }
    leaveOutReplaced(limited);
    return limited;
  }

  // A limit the request gives: counted in a log of its own unit, apart from any rule's counter.
  bool overridden(std::string_view domain,
                  const envoy::extensions::common::ratelimit::v3::RateLimitDescriptor& descriptor,
                  const std::vector<DescriptorEntry>& entries, Limited& each) const {
    const auto unit = unitOf(descriptor.limit().unit());
    if (!unit || descriptor.limit().requests_per_unit() == 0) return false;  // as envoyproxy: no limit then
    each.requests_per_unit = descriptor.limit().requests_per_unit();
    each.unit = *unit;
    each.limit = Limit{each.requests_per_unit, infoOf(*unit).length};
    each.counting = "log";
    std::string name(domain);
    for (const DescriptorEntry& entry : entries) name.append(".").append(entry.key);
    each.policy = name + ".override." + std::string(infoOf(*unit).name);
    each.redis_key = counterKey(domain, each.policy, {}, entries);
    return true;
  }

  void ruled(const Rule& rule, std::string_view domain, const std::vector<DescriptorEntry>& entries,
             Limited& each) const {
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
    each.redis_key = counterKey(domain, rule.stats_key, kept_as, entries);
    each.policy = rule.name.empty() ? rule.stats_key : rule.name;
  }

  // "swlrl:{shop}.user:5=alice" for the rule "shop.user" kept as a log, "swlrl:{shop}.user:gcra:5=alice"
  // kept by GCRA: a rule that changes how it is kept on a reload starts a key of the right type rather
  // than fail on the old one. The domain is the hash tag, so that on a Cluster one request's counters
  // share a slot, as one script needs (the prefix holds no brace, and every key of a request starts
  // alike up to the tag's end). Length-prefixed values: no value can end early and make two
  // descriptors one key, nor be taken for how the key is kept.
  std::string counterKey(std::string_view domain, std::string_view name, std::string_view kept_as,
                         const std::vector<DescriptorEntry>& entries) const {
    std::string key = options_.key_prefix;
    key.append(":{").append(domain).append("}").append(name.substr(domain.size())).append(":");
    if (!kept_as.empty()) key.append(kept_as).append(":");
    for (const DescriptorEntry& entry : entries)
      key.append(std::to_string(entry.value.size())).append("=").append(entry.value);
    return key;
  }

  static void leaveOutReplaced(std::vector<Limited>& limited) {
    std::vector<std::string_view> replaced;
    for (const Limited& each : limited) {
      if (each.rule != nullptr) replaced.insert(replaced.end(), each.rule->replaces.begin(), each.rule->replaces.end());
    }
    if (replaced.empty()) return;
    limited.erase(std::remove_if(limited.begin(), limited.end(),
                                 [&](const Limited& each) {
                                   return each.rule != nullptr && !each.rule->name.empty() &&
                                          std::find(replaced.begin(), replaced.end(), each.rule->name) !=
                                              replaced.end();
                                 }),
                  limited.end());
  }

  // Decides every limited descriptor in one call; while the only refusals are shadow rules', decides
  // again without them (they record nothing, as swl's shadow mode records nothing for a refusal).
  void decideAll(std::vector<Limited>& limited) {
    std::vector<Limited*> open;
    // The same counter twice in one request (two of Envoy's actions making one descriptor) is decided
    // once: one script must not record one request twice in one log.
    std::vector<std::pair<Limited*, const Limited*>> repeats;
    for (Limited& each : limited) {
      const auto same = std::find_if(open.begin(), open.end(),
                                     [&](const Limited* other) { return other->redis_key == each.redis_key; });
      if (each.hits > each.limit.max_requests) {
        each.decision = neverFits(each);  // the whole limit could not hold it
      } else if (same != open.end()) {
        repeats.emplace_back(&each, *same);
      } else {
        open.push_back(&each);
      }
    }
    if (open.size() > ScriptCall::kMaxKeys) {
      throw InvalidArgument("swl-ratelimit: " + std::to_string(open.size()) + " limited descriptors in one request; " +
                            "one decision takes at most " + std::to_string(ScriptCall::kMaxKeys));
    }
    const bool refused_before = std::any_of(limited.begin(), limited.end(), [](const Limited& each) {
      return each.decision && !each.decision->allowed && !each.shadow;
    });
    while (!open.empty()) {
      const MultiDecision decided = decideTogether(open);
      std::vector<Limited*> again;
      bool real_refusal = refused_before;
      for (std::size_t i = 0; i < open.size(); ++i) {
        open[i]->decision = decided.rules[i];
        if (!open[i]->decision->allowed && !open[i]->shadow) real_refusal = true;
      }
      if (decided.decision.allowed || real_refusal) break;
      for (Limited* each : open) {
        if (each->decision->allowed) again.push_back(each);
      }
      open = std::move(again);
    }
    for (const auto& [repeat, decided] : repeats) repeat->decision = decided->decision;
  }

  MultiDecision decideTogether(const std::vector<Limited*>& open) {
    std::vector<std::string_view> keys;
    std::vector<std::int64_t> costs;
    std::vector<Limit> limits;
    std::string signature;
    for (const Limited* each : open) {
      keys.push_back(each->redis_key);
      costs.push_back(each->hits);
      limits.push_back(each->limit);
      signature.append(each->counting).append(";");
    }
    return limiterFor(signature, open).tryAcquire(keys, costs, limits);
  }

  // The MultiLimiter for one sequence of ways of counting, made once: its rules are slots, and the
  // keys and limits come with each call.
  MultiLimiter<GivenKey>& limiterFor(const std::string& signature, const std::vector<Limited*>& open) {
    const std::lock_guard<std::mutex> lock(limiters_mutex_);
    auto found = limiters_.find(signature);
    if (found == limiters_.end()) {
      std::vector<swl::Rule> slots;
      for (std::size_t i = 0; i < open.size(); ++i) {
        if (const std::optional<Periods> periods = periodsOf(*open[i])) {
          slots.emplace_back(std::to_string(i), open[i]->limit.max_requests, *periods);
        } else if (open[i]->rule != nullptr && open[i]->rule->algorithm == Algorithm::gcra) {
          slots.push_back(swl::Rule::gcra(std::to_string(i), open[i]->limit));
        } else {
          slots.emplace_back(std::to_string(i), open[i]->limit);
        }
      }
      LimiterOptions options;
      options.on_failure = options_.on_failure;
      options.observer = options_.observer;
      found = limiters_
                  .emplace(signature, std::make_unique<MultiLimiter<GivenKey>>(*redis_, std::move(slots),
                                                                               std::move(options), options_.key_prefix))
                  .first;
    }
    return *found->second;
  }

  void report(const std::vector<Limited>& limited) const {
    for (const Limited& each : limited) {
      if (!each.decision) continue;
      const Decision& decision = *each.decision;
      const DescriptorOutcome outcome = decision.tier != Tier::redis ? DescriptorOutcome::failure_policy
                                        : decision.allowed           ? DescriptorOutcome::ok
                                        : each.shadow                ? DescriptorOutcome::shadow_over_limit
                                                                     : DescriptorOutcome::over_limit;
      options_.on_descriptor(each.rule != nullptr ? std::string_view(each.rule->stats_key) : "override", outcome);
    }
  }

  static Decision neverFits(const Limited& each) {
    Decision decision;
    decision.allowed = each.shadow;
    decision.shadow_rejected = each.shadow;
    decision.limit = each.limit.max_requests;
    decision.retry_after = std::chrono::duration_cast<std::chrono::microseconds>(each.limit.window);
    return decision;
  }

  static void describeLimit(const Limited& each, rls::RateLimitResponse::DescriptorStatus& status) {
    auto& limit = *status.mutable_current_limit();
    limit.set_requests_per_unit(static_cast<std::uint32_t>(
        std::min<std::int64_t>(each.requests_per_unit, std::numeric_limits<std::uint32_t>::max())));
    limit.set_unit(static_cast<rls::RateLimitResponse::RateLimit::Unit>(infoOf(each.unit).envoy_number));
    if (each.rule != nullptr) limit.set_name(each.rule->name);
  }

  static void answerOverall(const std::vector<Limited>& limited, rls::RateLimitResponse& response) {
    bool over = false;
    const Limited* binding = nullptr;
    for (const Limited& each : limited) {
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
  static void addRateLimitHeaders(const std::vector<Limited>& limited, rls::RateLimitResponse& response) {
    std::vector<std::string> names;
    std::vector<PolicyReport> policies;
    std::vector<std::string_view> counters;
    names.reserve(limited.size());
    for (const Limited& each : limited) {
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

  // The periods a descriptor is counted in, none for a log: made only with its MultiLimiter (a calendar's
  // reads the time zone's rules), never per call.
  static std::optional<Periods> periodsOf(const Limited& each) {
    if (each.rule == nullptr) return std::nullopt;
    if (each.rule->calendar) return calendarPeriods(*each.rule);
    if (each.rule->algorithm == Algorithm::fixed_window) return fixedPeriods(each.rule->limit.window);
    return std::nullopt;
  }

  // Windows of `length` from the epoch on, as envoyproxy/ratelimit counts.
  static Periods fixedPeriods(std::chrono::microseconds usual) {
    return Periods("fixed windows of " + std::to_string(usual.count()) + " us", usual,
                   [usual](std::chrono::microseconds instant) {
                     const auto start = instant - instant % usual;
                     return Period{start, start + usual};
                   });
  }

  // The configuration allows calendar periods of a day or longer only.
  static Periods calendarPeriods(const Rule& rule) {
    switch (rule.unit) {
      case Unit::week:
        return CalendarPeriods::weeks(1, rule.time_zone);
      case Unit::month:
        return CalendarPeriods::months(1, rule.time_zone);
      case Unit::year:
        return CalendarPeriods::months(12, rule.time_zone);
      default:
        return CalendarPeriods::days(1, rule.time_zone);
    }
  }

  RedisClient* redis_;
  DeciderOptions options_;
  std::mutex limiters_mutex_;
  std::map<std::string, std::unique_ptr<MultiLimiter<GivenKey>>> limiters_;
};

}  // namespace swl::ratelimit
