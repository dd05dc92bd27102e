#pragma once
// Observer: a callback that sees every decision a limiter hands out and every error it meets, for
// metrics, logs and traces (swl/prometheus.hpp feeds prometheus-cpp from one).
//
//   swl::LimiterOptions options;
//   options.observer = [](const swl::DecisionEvent& event) { log(event.key, event.verdict, event.latency); };
//
// It runs on the calling thread, after the decision and before tryAcquire returns, so it must be
// thread-safe and cheap. What it throws is dropped: a bug in metrics must not turn into refused requests.

#include <swl/error.hpp>
#include <swl/limit.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <string_view>

namespace swl {

enum class Verdict {
  allowed,
  rejected,
  error,  // the call threw (invalid input, or Redis failed under FailurePolicy::throw_error)
};

constexpr std::string_view toString(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::allowed:
      return "allowed";
    case Verdict::rejected:
      return "rejected";
    case Verdict::error:
      return "error";
  }
  return "unknown";
}

// Everything in it is valid only during the call: copy what you keep.
struct DecisionEvent {
  std::string_view key;  // the caller's key, before the key policy
  std::int64_t cost = 0;
  Verdict verdict = Verdict::error;
  DecisionSource tier = DecisionSource::redis;  // who decided; for Verdict::error, the tier that was asked
  std::chrono::nanoseconds latency{0};          // the call's time inside swl, round trip included
  const Decision* decision = nullptr;           // null for Verdict::error
  // Why Redis (or the input) failed: set with Verdict::error, and also when a failure policy or the
  // insurance tier answered in Redis's place. Null when nothing went wrong.
  const Error* error = nullptr;
};

using Observer = std::function<void(const DecisionEvent&)>;

namespace detail {

// Times one call and reports it to an observer, if there is one; costs a branch when there is none.
class Observation {
 public:
  // `asked` is the tier an error is reported against.
  Observation(const Observer& observer, std::string_view key, std::int64_t cost,
              DecisionSource asked = DecisionSource::redis)
      : observer_(observer),
        key_(key),
        cost_(cost),
        asked_(asked),
        started_(observer ? Clock::now() : Clock::time_point()) {}

  // `decision` is null when the call throws; `failure` is what went wrong, if anything did.
  void report(const Decision* decision, const std::exception_ptr& failure) const noexcept {
    reportFor(key_, cost_, decision, failure);
  }

  // The same for one request of a batch timed as a whole.
  void reportFor(std::string_view key, std::int64_t cost, const Decision* decision,
                 const std::exception_ptr& failure) const noexcept {
    if (!observer_) return;
    DecisionEvent event;
    event.key = key;
    event.cost = cost;
    event.decision = decision;
    event.verdict = decision == nullptr ? Verdict::error : decision->allowed ? Verdict::allowed : Verdict::rejected;
    event.tier = decision == nullptr ? asked_ : decision->source;
    event.latency = Clock::now() - started_;
    try {
      if (!failure) return observer_(event);
      try {
        std::rethrow_exception(failure);
      } catch (const Error& error) {
        event.error = &error;
        return observer_(event);
      }
    } catch (...) {  // see the header comment: an observer's failure is not the caller's
    }
  }

 private:
  using Clock = std::chrono::steady_clock;

  const Observer& observer_;
  std::string_view key_;
  std::int64_t cost_;
  DecisionSource asked_;
  Clock::time_point started_;
};

}  // namespace detail
}  // namespace swl
