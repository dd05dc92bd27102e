#pragma once
/// \file
/// Observer: a callback that sees every decision a limiter hands out and every error it meets, for
/// metrics, logs and traces (swl/integrations/prometheus.hpp feeds prometheus-cpp from one).
///
///   swl::LimiterOptions options;
///   options.observer = [](const swl::DecisionEvent& event) { log(event.key, event.verdict, event.latency); };
///
/// Every limiter calls it once per decision (a batch: once per request), from its outermost layer, so a
/// composite's inner limiters never report twice. It runs on the calling thread (an async limiter's: on
/// the loop), after the decision and before the caller sees it, so it must be thread-safe and cheap.
/// What it throws is dropped: a bug in metrics must not turn into refused requests.

#include <swl/decision.hpp>
#include <swl/error.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

namespace swl {

/// What became of one call, as the observer sees it.
enum class Verdict {
  allowed,          ///< admitted
  rejected,         ///< refused
  shadow_rejected,  ///< refused by the limit, admitted by shadow mode (Decision::shadow_rejected)
  error,            ///< the call threw (invalid input, or Redis failed under FailurePolicy::throw_error)
};

/// "allowed", "rejected", ...: for logs and metric labels.
constexpr std::string_view toString(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::allowed:
      return "allowed";
    case Verdict::rejected:
      return "rejected";
    case Verdict::shadow_rejected:
      return "shadow_rejected";
    case Verdict::error:
      return "error";
  }
  return "unknown";
}

/// Everything in it is valid only during the call: copy what you keep.
struct DecisionEvent {
  std::string_view key;   ///< the caller's key, before the key policy (MultiLimiter: the binding rule's key)
  std::string_view rule;  ///< MultiLimiter: the binding rule's name; empty for single-limit limiters
  /// The units the call asked for (MultiLimiter: of the binding rule, whose cost may differ from the others').
  std::int64_t cost = 0;
  /// What became of the call.
  Verdict verdict = Verdict::error;
  Tier tier = Tier::redis;              ///< who decided; for Verdict::error, the tier that was asked
  std::chrono::nanoseconds latency{0};  ///< the call's time inside swl, round trip included
  const Decision* decision = nullptr;   ///< null for Verdict::error
  /// Why Redis (or the input) failed: set with Verdict::error, and also when a failure policy or the
  /// insurance tier answered in Redis's place. Null when nothing went wrong.
  const Error* error = nullptr;
};

/// LimiterOptions::observer: called once per decision and per error, on the calling thread, before the
/// caller sees the decision; what it throws is dropped.
using Observer = std::function<void(const DecisionEvent&)>;

}  // namespace swl
