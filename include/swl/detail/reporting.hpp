#pragma once
// What every limiter does alike around its decisions: check a request, answer for a Redis that could not
// (the failure policy), carry out or only mark a refusal (shadow mode), and report each decision and
// error to the observer once. The one place those happen: LimiterFacade (limiter.hpp) applies them for
// every limiter, and the limiters of other shapes (MultiLimiter, ConcurrencyLimiter, the async limiter)
// call the same helpers.

#include <swl/decision.hpp>
#include <swl/error.hpp>
#include <swl/observer.hpp>
#include <swl/options.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {
namespace detail {

// Scores are microseconds held in Lua doubles: counts and times must stay below 2^53 to be exact.
inline constexpr std::int64_t kLargestExact = std::int64_t{1} << 53;

inline Limit checkedLimit(Limit limit) {
  if (limit.max_requests <= 0 || limit.max_requests >= kLargestExact) {
    throw InvalidArgument("swl::Limit: max_requests " + std::to_string(limit.max_requests) + " is not in 1..2^53-1");
  }
  if (limit.window.count() <= 0 || limit.window.count() >= kLargestExact) {
    throw InvalidArgument("swl::Limit: window of " + std::to_string(limit.window.count()) +
                          " us is not positive (or not below 2^53 us)");
  }
  return limit;
}

// The checks every limiter applies to a request before it decides anything, so that all of them refuse
// the same input with the same words. `limiter` and `call` name the call ("swl::LocalLimiter",
// "tryAcquire"). Nothing is built unless the request is refused: this runs on every decision.
inline void checkRequest(std::string_view limiter, std::string_view call, std::string_view key, std::int64_t cost,
                         std::int64_t limit) {
  const auto refuse = [&](const std::string& why) {
    return InvalidArgument(std::string(limiter) + "::" + std::string(call) + ": " + why);
  };
  if (key.empty()) throw refuse("the key is empty");
  const auto of_key = [&] { return " (key " + quoted(key) + ")"; };
  if (cost <= 0) throw refuse("cost " + std::to_string(cost) + " is not positive" + of_key());
  if (cost > limit) {
    throw refuse("cost " + std::to_string(cost) + " exceeds the limit of " + std::to_string(limit) +
                 " per window, so it could never be admitted" + of_key());
  }
}

// No count to go by: ask the caller back after a second, or sooner for a shorter window.
inline Decision blindRefusal(const Limit& limit) {
  Decision decision;
  decision.limit = limit.max_requests;
  decision.retry_after = std::min<std::chrono::microseconds>(limit.window, std::chrono::seconds(1));
  decision.reset_after = decision.retry_after;
  decision.tier = Tier::fail_closed;
  return decision;
}

inline bool isInvalidArgument(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const InvalidArgument&) {
    return true;
  } catch (...) {
    return false;
  }
}

// The failure policy: what a request of `cost` gets when no tier could decide it because of `error`.
// Invalid input (and a call the client refused to send, such as keys in two cluster slots) is the
// caller's mistake and stays an error whatever the policy: failing open on it would hide it.
inline Outcome answerForFailure(FailurePolicy policy, const Limit& limit, std::int64_t cost, std::exception_ptr error) {
  if (policy == FailurePolicy::throw_error || isInvalidArgument(error)) return {blindRefusal(limit), std::move(error)};
  if (policy == FailurePolicy::deny) return {blindRefusal(limit), nullptr};
  Decision admitted;
  admitted.allowed = true;
  admitted.limit = limit.max_requests;
  admitted.remaining = std::max<std::int64_t>(0, limit.max_requests - cost);
  admitted.tier = Tier::fail_open;
  return {admitted, nullptr};
}

// Times one call and reports it to an observer, if there is one; costs a branch when there is none.
class Observation {
 public:
  // `asked` is the tier an error is reported against.
  Observation(const Observer& observer, Tier asked)
      : observer_(&observer), asked_(asked), started_(observer ? Clock::now() : Clock::time_point()) {}

  // `decision` is null when the call failed; `failure` is what went wrong, if anything did.
  void report(std::string_view key, std::int64_t cost, const Decision* decision, const std::exception_ptr& failure,
              std::string_view rule = {}) const noexcept {
    if (!*observer_) return;
    DecisionEvent event;
    event.key = key;
    event.rule = rule;
    event.cost = cost;
    event.decision = decision;
    event.verdict = decision == nullptr        ? Verdict::error
                    : decision->shadow_refusal ? Verdict::shadow_rejected
                    : decision->allowed        ? Verdict::allowed
                                               : Verdict::rejected;
    event.tier = decision == nullptr ? asked_ : decision->tier;
    event.latency = Clock::now() - started_;
    try {
      if (!failure) return (*observer_)(event);
      try {
        std::rethrow_exception(failure);
      } catch (const Error& error) {
        event.error = &error;
        return (*observer_)(event);
      }
    } catch (...) {  // see observer.hpp: an observer's failure is not the caller's
    }
  }

  void report(std::string_view key, std::int64_t cost, const Outcome& outcome, const std::exception_ptr& failure,
              std::string_view rule = {}) const noexcept {
    report(key, cost, outcome.ok() ? &outcome.decision : nullptr, failure, rule);
  }

 private:
  using Clock = std::chrono::steady_clock;

  const Observer* observer_;
  Tier asked_;
  Clock::time_point started_;
};

// Shadow mode (options.hpp): a refusal becomes an admission that says what it was. The one place it
// happens, after the failure policy, so that a fail-closed answer is shadowed like any refusal.
inline void enforce(Enforcement enforcement, Decision& decision) noexcept {
  if (enforcement == Enforcement::enforce || decision.allowed) return;
  decision.allowed = true;
  decision.shadow_refusal = true;
}

inline void enforce(Enforcement enforcement, Outcome& outcome) noexcept {
  if (outcome.ok()) enforce(enforcement, outcome.decision);
}

// Who watches a limiter, who answers for it when Redis cannot, and whether its refusals are carried
// out: what the two helpers below apply.
struct Reporting {
  const Observer& observer;
  FailurePolicy on_failure = FailurePolicy::throw_error;
  Tier asked = Tier::redis;
  Enforcement enforcement = Enforcement::enforce;
};

// tryAcquire, for every limiter: `decide(cause)` returns the decision or throws swl::Error; a tier that
// answered in place of a failed one (insurance) keeps the failure in `cause` for the observer.
template <class Decide>
Decision reportedDecision(const Reporting& reporting, const Limit& limit, std::string_view key, std::int64_t cost,
                          Decide&& decide) {
  const Observation observation(reporting.observer, reporting.asked);
  std::exception_ptr cause;
  Outcome outcome;
  try {
    outcome.decision = decide(cause);
  } catch (const Error&) {
    cause = std::current_exception();
    outcome = answerForFailure(reporting.on_failure, limit, cost, cause);
  }
  enforce(reporting.enforcement, outcome);
  observation.report(key, cost, outcome, cause);
  return outcome.value();
}

// tryAcquireMany, for every limiter: `decide_many(causes)` returns decideMany's Outcomes, whose errors the
// failure policy may answer; a tier that answered in place of a failed one (insurance) keeps that
// failure in `causes` for the observer. Each request is reported with the whole batch's latency.
template <class DecideMany>
std::vector<Outcome> reportedOutcomes(const Reporting& reporting, const Limit& limit,
                                      const std::vector<AcquireRequest>& requests, DecideMany&& decide_many) {
  const Observation observation(reporting.observer, reporting.asked);
  std::vector<std::exception_ptr> causes(requests.size());
  std::vector<Outcome> outcomes = decide_many(causes);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (outcomes[i].error) {
      causes[i] = outcomes[i].error;
      outcomes[i] = answerForFailure(reporting.on_failure, requests[i].limitOr(limit), requests[i].cost, causes[i]);
    }
    enforce(reporting.enforcement, outcomes[i]);
    observation.report(requests[i].key, requests[i].cost, outcomes[i], causes[i]);
  }
  return outcomes;
}

}  // namespace detail
}  // namespace swl
