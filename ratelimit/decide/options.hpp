#pragma once
/// \file
/// How swl-ratelimit decides and answers, besides its configuration: one options type, which the
/// server's settings hold whole (settings/settings.hpp), a plan reads (plan.hpp) and the decider keeps
/// (decider.hpp); and who is told what each decision came to, for metrics. Plain values: no I/O, no
/// protobuf.

#include <swl/observer.hpp>
#include <swl/options.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace swl::ratelimit {

/// envoyproxy/ratelimit's response headers (LIMIT_RESPONSE_HEADERS_ENABLED): the limit, the hits left
/// and the seconds to the reset of the descriptor nearest its limit, under these names.
struct LimitHeaders {
  bool enabled = false;
  std::string limit = "RateLimit-Limit";
  std::string remaining = "RateLimit-Remaining";
  std::string reset = "RateLimit-Reset";
};

/// How the service decides and answers, besides its configuration.
struct DeciderOptions {
  /// What every Redis key of the service starts with.
  std::string key_prefix = "swlrl";
  /// What a request gets when Redis cannot answer: admitted (FailurePolicy::allow, Envoy's expectation)
  /// or refused (FailurePolicy::deny).
  FailurePolicy on_failure = FailurePolicy::allow;
  /// envoyproxy/ratelimit's SHADOW_MODE for the whole server: every request is answered OK overall, each
  /// descriptor's status still saying what it got. The request is served, so the rules that admit it
  /// count it; a refusing rule records nothing.
  bool shadow_mode = false;
  /// envoyproxy/ratelimit's QUOTA_MODE: every rule is in quota mode (Rule::quota_mode).
  bool quota_mode = false;
  /// Charges after the fact (--charge-descriptor-hits): a descriptor that carries its own hits_addend
  /// above 0 (Envoy's per-rate-limit `hits_addend`, as Envoy Gateway's response cost sends the tokens a
  /// stream used when it is done) reports units already spent. It is recorded whole whether or not it
  /// fits (up to the limit, for one charge larger than the whole limit), answered OVER_LIMIT when it
  /// passed the limit, and the checks after it (hits_addend 0) are refused until the window slid it out.
  bool charge_descriptor_hits = false;
  /// Kuadrant's Reserve and Commit (--reservations): every decision then releases the holds that ran out
  /// on the counters it reaches first (swl::MultiLimiter::keepHolds), in Lua even where the swl-native
  /// module is loaded. Off, Reserve and Commit are refused, and decisions take the module where it is.
  bool reservations = false;
  /// envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED, and the names of its three headers.
  LimitHeaders limit_headers;
};

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

/// What one limited descriptor of a request came to, for metrics per rule; its counts are in units of
/// its limit (a weighted rule's hits, not its requests_per_unit), so that envoyproxy/ratelimit's split of
/// hits into within, near and over the limit (telemetry/hit_split.hpp) adds up.
struct DescriptorReport {
  /// envoyproxy/ratelimit's stats key of its rule ("shop.user"); for a limit the request set, the name
  /// its RateLimit headers give it ("shop.user.override.minute"), which names no value of the request.
  std::string_view stats_key;
  /// A limit the request set (an override), not a rule of the configuration.
  bool overridden = false;
  DescriptorOutcome outcome = DescriptorOutcome::ok;
  /// Its cost (0 for a check: hits_addend 0).
  std::int64_t hits = 0;
  std::int64_t limit = 0;
  /// What its window held before this request: envoyproxy's limitBeforeIncrease. The request's hits
  /// come on top, recorded or not (a refusal records nothing here, and envoyproxy counts it anyway).
  std::int64_t used_before = 0;
};

/// Why a call got no decision of Redis's, as envoyproxy/ratelimit counts them: the request was wrong
/// (service), or Redis could not answer, whether the call failed or the failure policy answered (redis).
enum class CallError { service, redis };

/// Who is told what each decision came to: none by default. Each is called from the threads that decide.
struct DecisionObservers {
  /// Sees each decision of the decider's MultiLimiters (swl::PrometheusMetrics::observer(), say).
  Observer observer;
  /// Told what each limited descriptor got: for metrics per rule.
  std::function<void(const DescriptorReport&)> on_descriptor;
  /// Told of each request for a domain the configuration does not have, and how many descriptors it has.
  std::function<void(std::string_view domain, std::size_t descriptors)> on_unknown_domain;
  /// Told of each call that got no decision of Redis's, once a call.
  std::function<void(CallError)> on_call_error;
};

}  // namespace swl::ratelimit
