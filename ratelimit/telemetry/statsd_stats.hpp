#pragma once
/// \file
/// envoyproxy/ratelimit's statistics, sent to statsd (statsd.hpp) with its names and types, and counted
/// as it counts them (its src/stats/manager_impl.go, src/limiter/base_limiter.go, src/metrics/metrics.go),
/// so that what reads them (Envoy Gateway's statsd_exporter mapping, a dashboard) reads ours:
///
///   ratelimit.service.rate_limit.<stats key>.total_hits     counter  per rule: its descriptors' hits
///   ratelimit.service.rate_limit.<stats key>.within_limit   counter  the hits admitted
///   ratelimit.service.rate_limit.<stats key>.near_limit     counter  the hits past NEAR_LIMIT_RATIO of the limit
///   ratelimit.service.rate_limit.<stats key>.over_limit     counter  the hits refused (a shadow rule's too)
///   ratelimit.service.rate_limit.<stats key>.shadow_mode    counter  the hits a shadow rule would have refused
///   ratelimit.service.rate_limit.<domain>.domain_not_found  counter  descriptors of a domain not configured
///   ratelimit.service.call.should_rate_limit.service_error  counter  calls refused as wrong
///   ratelimit.service.call.should_rate_limit.redis_error    counter  calls Redis could not decide
///   ratelimit.service.config_load_success                   counter  configurations put in force
///   ratelimit.service.config_load_error                     counter  configurations refused
///   ratelimit_server.ShouldRateLimit.total_requests         counter  gRPC calls
///   ratelimit_server.ShouldRateLimit.response_time          timer    each gRPC call's time, in whole ms
///
/// A stats key and a domain are sanitized as envoyproxy sanitizes them (statsd_lines.hpp); EXTRA_TAGS
/// follow every name.

#include <ratelimit/decide/options.hpp>
#include <ratelimit/telemetry/hit_split.hpp>
#include <ratelimit/telemetry/log.hpp>
#include <ratelimit/telemetry/statsd.hpp>
#include <ratelimit/telemetry/statsd_lines.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace swl::ratelimit {

/// envoyproxy/ratelimit's statistics on a sink of their own, from the moment they are made until they
/// are destroyed (a last flush then).
class StatsdStats {
 public:
  /// Distinct unknown domains named, at most: a client chooses them, and each is a counter kept for good.
  static constexpr std::size_t kMostUnknownDomains = 1000;

  /// `log`, which must outlive them, is told when statsd's host cannot be found.
  explicit StatsdStats(const StatsdOptions& options, Log* log = nullptr)
      : sink_(options, log),
        near_ratio_(options.near_limit_ratio),
        service_error_(sink_.counter("ratelimit.service.call.should_rate_limit.service_error")),
        redis_error_(sink_.counter("ratelimit.service.call.should_rate_limit.redis_error")),
        config_load_success_(sink_.counter("ratelimit.service.config_load_success")),
        config_load_error_(sink_.counter("ratelimit.service.config_load_error")),
        total_requests_(sink_.counter("ratelimit_server.ShouldRateLimit.total_requests")),
        response_time_(sink_.timer("ratelimit_server.ShouldRateLimit.response_time")) {}

  /// Who counts the decider's decisions here (they must outlive the decider).
  DecisionObservers observers() {
    DecisionObservers observers;
    observers.on_descriptor = [this](const DescriptorReport& report) { countDescriptor(report); };
    observers.on_unknown_domain = [this](std::string_view domain, std::size_t descriptors) {
      if (StatsdCounter* const* found = unknown_domains_.find(domain, [&] { return &notFoundCounter(domain); })) {
        (*found)->add(descriptors);
      }
    };
    observers.on_call_error = [this](CallError error) {
      (error == CallError::service ? service_error_ : redis_error_).add(1);
    };
    return observers;
  }

  /// One ShouldRateLimit call over gRPC, answered after `took` (envoyproxy's interceptor counts gRPC
  /// calls only, not /json's).
  void callAnswered(std::chrono::nanoseconds took) {
    total_requests_.add(1);
    response_time_.observe(took);
  }

  /// A configuration read or pushed: put in force, or refused.
  void configurationLoaded(bool put_in_force) { (put_in_force ? config_load_success_ : config_load_error_).add(1); }

  StatsdSink& sink() { return sink_; }

 private:
  struct RuleCounters {
    StatsdCounter* total_hits;
    StatsdCounter* over_limit;
    StatsdCounter* near_limit;
    StatsdCounter* within_limit;
    StatsdCounter* shadow_mode;
  };

  void countDescriptor(const DescriptorReport& report) {
    const RuleCounters& counters = *rules_.find(report.stats_key, [&] { return countersOf(report.stats_key); });
    const HitSplit split = splitHits(report, near_ratio_);
    counters.total_hits->add(split.total_hits);
    counters.over_limit->add(split.over_limit);
    counters.near_limit->add(split.near_limit);
    counters.within_limit->add(split.within_limit);
    counters.shadow_mode->add(split.shadow_mode);
  }

  RuleCounters countersOf(std::string_view stats_key) {
    const std::string prefix = "ratelimit.service.rate_limit." + sanitizeStatName(stats_key);
    return {&sink_.counter(prefix + ".total_hits"), &sink_.counter(prefix + ".over_limit"),
            &sink_.counter(prefix + ".near_limit"), &sink_.counter(prefix + ".within_limit"),
            &sink_.counter(prefix + ".shadow_mode")};
  }

  StatsdCounter& notFoundCounter(std::string_view domain) {
    return sink_.counter("ratelimit.service.rate_limit." + sanitizeStatName(domain) + ".domain_not_found");
  }

  StatsdSink sink_;  // first: destroyed last, after its last flush counted everything
  float near_ratio_;
  StatsdCounter& service_error_;
  StatsdCounter& redis_error_;
  StatsdCounter& config_load_success_;
  StatsdCounter& config_load_error_;
  StatsdCounter& total_requests_;
  StatsdTimer& response_time_;
  statsd_detail::Named<RuleCounters> rules_;
  statsd_detail::Named<StatsdCounter*> unknown_domains_{kMostUnknownDomains};
};

/// Observers that tell both `first` and `second` (the Prometheus metrics and statsd, say).
inline DecisionObservers bothOf(DecisionObservers first, DecisionObservers second) {
  const auto both = [](auto one, auto other) {
    using Function = decltype(one);
    if (!one) return other;
    if (!other) return one;
    return Function([one = std::move(one), other = std::move(other)](const auto&... arguments) {
      one(arguments...);
      other(arguments...);
    });
  };
  DecisionObservers joined;
  joined.observer = both(std::move(first.observer), std::move(second.observer));
  joined.on_descriptor = both(std::move(first.on_descriptor), std::move(second.on_descriptor));
  joined.on_unknown_domain = both(std::move(first.on_unknown_domain), std::move(second.on_unknown_domain));
  joined.on_call_error = both(std::move(first.on_call_error), std::move(second.on_call_error));
  return joined;
}

}  // namespace swl::ratelimit
