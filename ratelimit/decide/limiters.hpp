#pragma once
/// \file
/// The MultiLimiters swl-ratelimit decides with: one for each sequence of ways of counting (a log, a GCRA
/// bucket, fixed windows, calendar periods) that its requests' descriptors come in, made on first use,
/// each rule a slot whose key and limit come with every call.

#include <ratelimit/config/rule.hpp>
#include <ratelimit/decide/options.hpp>
#include <ratelimit/decide/plan.hpp>

#include <swl/calendar.hpp>
#include <swl/composites/multi_limiter.hpp>
#include <swl/periods.hpp>
#include <swl/redis/client.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// The key policy of the service's MultiLimiters: the decider makes each descriptor's Redis key itself
/// (whatever slot of a MultiLimiter decides it), so the key is taken as it is.
class GivenKey {
 public:
  explicit GivenKey(const std::string& /*the slot's name*/ = {}) {}
  std::string key(std::string_view redis_key) const { return std::string(redis_key); }
};

/// The service's MultiLimiters, over one RedisClient. Thread-safe.
class ServiceLimiters {
 public:
  /// Limiters over `redis` (which must outlive them), answering by `options`' failure policy, keeping
  /// holds when it allows reservations, and telling `observer` each decision.
  ServiceLimiters(RedisClient& redis, const DeciderOptions& options, Observer observer)
      : redis_(&redis),
        on_failure_(options.on_failure),
        key_prefix_(options.key_prefix),
        reservations_(options.reservations),
        observer_(std::move(observer)) {}

  /// Whether reservations are allowed (DeciderOptions::reservations): then every limiter keeps holds.
  bool reservations() const noexcept { return reservations_; }

  /// The MultiLimiter for one sequence of ways of counting, made once: its rules are slots, and the
  /// keys and limits come with each call.
  MultiLimiter<GivenKey>& limiterFor(const std::vector<LimitedDescriptor*>& open) {
    std::string signature;
    for (const LimitedDescriptor* each : open) signature.append(each->counting).append(";");
    const std::lock_guard<std::mutex> lock(mutex_);
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
      options.on_failure = on_failure_;
      options.observer = observer_;
      found = limiters_
                  .emplace(signature, std::make_unique<MultiLimiter<GivenKey>>(*redis_, std::move(slots),
                                                                               std::move(options), key_prefix_))
                  .first;
      if (reservations_) found->second->keepHolds();
    }
    return *found->second;
  }

 private:
  // The periods a descriptor is counted in, none for a log: made only with its MultiLimiter (a calendar's
  // reads the time zone's rules), never per call.
  static std::optional<Periods> periodsOf(const LimitedDescriptor& each) {
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
  FailurePolicy on_failure_;
  std::string key_prefix_;
  bool reservations_;
  Observer observer_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<MultiLimiter<GivenKey>>> limiters_;
};

}  // namespace swl::ratelimit
