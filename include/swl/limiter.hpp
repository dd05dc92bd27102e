#pragma once
// The limiter contract: what every limiter in swl promises, whatever decides behind it (Redis through any
// algorithm, this process's memory, or a composite of limiters), and the one home of what they all do
// alike: check a request, answer for a Redis that could not, report to the observer, wait.
//
// A limiter offers
//
//   Decision tryAcquire(std::string_view key, std::int64_t cost = 1);
//       `cost` units for `key`, admitted iff they fit in the limit now. A request no limit could take
//       (empty key, cost outside 1..limit) throws InvalidArgument before anything is sent. When Redis
//       cannot decide, the failure policy answers (Decision::tier says so), or, under
//       FailurePolicy::throw_error, the swl::Error is thrown. In shadow mode (Enforcement::shadow) a
//       refusal is admitted and marked Decision::shadow_refusal.
//   Decision tryAcquire(std::string_view key, std::int64_t cost, const Limit& limit);
//       The same under a limit chosen for this call (a tenant's plan) instead of the limiter's own; a
//       limit no limiter could hold throws InvalidArgument. The key's state is one whatever limit a call
//       brings: the README's "Limits per tenant" says what a key's changed limit does.
//   std::vector<Outcome> tryAcquireMany(const std::vector<AcquireRequest>& requests);
//       Each request decided as tryAcquire would, one after another in input order, in as few round
//       trips as the limiter can; a failure spoils only its own Outcome.
//   Decision acquire(std::string_view key, std::int64_t cost, [const Limit& limit,] Deadline deadline);
//       Waits to be admitted: tries, and while refused sleeps retry_after (never spinning) and tries
//       again. Returns the admitting decision, or the last refusal as soon as its retry_after would end
//       after the deadline, so it never sleeps in vain. A deadline is a steady_clock time or a duration.
//   Usage peek(std::string_view key [, const Limit& limit]);   what the key has used, recording nothing;
//                                                              errors are thrown
//   bool reset(std::string_view key);       forgets the key: whether there was anything; errors are thrown
//   const Limit& limit() const;
//   void validate(std::string_view key, std::int64_t cost [, const Limit& limit]) const;
//       throws what tryAcquire would for bad input
//
// and, for composites (limiters made of limiters), the same decisions without the observer and the
// failure policy, which only the outermost limiter applies:
//
//   Decision decide(std::string_view key, std::int64_t cost [, const Limit& limit]);   throws swl::Error
//   std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests);     errors in the Outcomes
//
// A batch's AcquireRequest may carry its own limit, as a call may.
//
// Every decision and every error of tryAcquire and tryAcquireMany reaches the observer exactly once.
// Thread safety: a Redis limiter is as safe as its RedisClient; the in-memory limiters and tiers lock.
// MultiLimiter (several limits, one decision) and the async limiters (the answer comes to a callback)
// keep the same promises in their own shape; their headers say how. `swl::isLimiter<L>` checks the
// shape at compile time.

#include <swl/decision.hpp>
#include <swl/error.hpp>
#include <swl/observer.hpp>
#include <swl/options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace swl {

// When acquire() gives up: a point on the steady clock, or a duration from now.
class Deadline {
 public:
  // Implicit, so that acquire(key, cost, 2s) and acquire(key, cost, steady_clock::now() + 2s) both read well.
  Deadline(std::chrono::steady_clock::time_point at) : at_(at) {}
  template <class Rep, class Period>
  Deadline(std::chrono::duration<Rep, Period> timeout)
      : at_(std::chrono::steady_clock::now() + std::chrono::ceil<std::chrono::steady_clock::duration>(timeout)) {}

  std::chrono::steady_clock::time_point at() const noexcept { return at_; }

 private:
  std::chrono::steady_clock::time_point at_;
};

// Whether L keeps the shape of the contract above (its meaning is for the tests to show).
template <class L, class = void>
struct IsLimiter : std::false_type {};
template <class L>
struct IsLimiter<
    L, std::void_t<decltype(std::declval<L&>().tryAcquire(std::string_view(), std::int64_t())),
                   decltype(std::declval<L&>().tryAcquireMany(std::declval<const std::vector<AcquireRequest>&>())),
                   decltype(std::declval<L&>().acquire(std::string_view(), std::int64_t(), std::declval<Deadline>())),
                   decltype(std::declval<L&>().peek(std::string_view())),
                   decltype(std::declval<L&>().reset(std::string_view())), decltype(std::declval<const L&>().limit()),
                   decltype(std::declval<const L&>().validate(std::string_view(), std::int64_t())),
                   decltype(std::declval<L&>().decide(std::string_view(), std::int64_t())),
                   decltype(std::declval<L&>().tryAcquire(std::string_view(), std::int64_t(), Limit())),
                   decltype(std::declval<L&>().decide(std::string_view(), std::int64_t(), Limit())),
                   decltype(std::declval<L&>().peek(std::string_view(), Limit())),
                   decltype(std::declval<L&>().decideMany(std::declval<const std::vector<AcquireRequest>&>()))>>
    : std::bool_constant<
          std::is_same_v<decltype(std::declval<L&>().tryAcquire(std::string_view(), std::int64_t())), Decision> &&
          std::is_same_v<decltype(std::declval<L&>().tryAcquireMany(
                             std::declval<const std::vector<AcquireRequest>&>())),
                         std::vector<Outcome>> &&
          std::is_same_v<decltype(std::declval<L&>().peek(std::string_view())), Usage> &&
          std::is_same_v<decltype(std::declval<L&>().reset(std::string_view())), bool> &&
          std::is_same_v<decltype(std::declval<const L&>().limit()), const Limit&> &&
          std::is_same_v<decltype(std::declval<L&>().decide(std::string_view(), std::int64_t())), Decision> &&
          std::is_same_v<decltype(std::declval<L&>().tryAcquire(std::string_view(), std::int64_t(), Limit())),
                         Decision> &&
          std::is_same_v<decltype(std::declval<L&>().decide(std::string_view(), std::int64_t(), Limit())), Decision>> {
};

template <class L>
inline constexpr bool isLimiter = IsLimiter<L>::value;

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
inline Decision refusedBlind(const Limit& limit) {
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
inline Outcome answered(FailurePolicy policy, const Limit& limit, std::int64_t cost, std::exception_ptr error) {
  if (policy == FailurePolicy::throw_error || isInvalidArgument(error)) return {refusedBlind(limit), std::move(error)};
  if (policy == FailurePolicy::deny) return {refusedBlind(limit), nullptr};
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
    outcome = answered(reporting.on_failure, limit, cost, cause);
  }
  enforce(reporting.enforcement, outcome);
  observation.report(key, cost, outcome, cause);
  return outcome.value();
}

// tryAcquireMany, for every limiter: `decide_many()` returns decideMany's Outcomes, whose errors the
// failure policy may answer. Each request is reported with the whole batch's latency.
template <class DecideMany>
std::vector<Outcome> reportedOutcomes(const Reporting& reporting, const Limit& limit,
                                      const std::vector<AcquireRequest>& requests, DecideMany&& decide_many) {
  const Observation observation(reporting.observer, reporting.asked);
  std::vector<Outcome> outcomes = decide_many();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const std::exception_ptr cause = outcomes[i].error;
    if (cause) outcomes[i] = answered(reporting.on_failure, requests[i].limitOr(limit), requests[i].cost, cause);
    enforce(reporting.enforcement, outcomes[i]);
    observation.report(requests[i].key, requests[i].cost, outcomes[i], cause);
  }
  return outcomes;
}

// decideMany for a limiter without a cheaper way: decide() each request in turn.
template <class Limiter>
std::vector<Outcome> eachDecided(Limiter& limiter, const std::vector<AcquireRequest>& requests) {
  std::vector<Outcome> outcomes(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Limit& limit = requests[i].limitOr(limiter.limit());
    try {
      outcomes[i].decision = limiter.decide(requests[i].key, requests[i].cost, limit);
    } catch (const Error&) {
      outcomes[i] = {refusedBlind(limit), std::current_exception()};
    }
  }
  return outcomes;
}

inline const Decision& decisionIn(const Decision& decision) noexcept { return decision; }
// An answer that holds a decision and more (ConcurrencyLimiter's Slot).
template <class Answer>
auto decisionIn(const Answer& answer) noexcept -> decltype(answer.decision()) {
  return answer.decision();
}

// The waiting of acquire: `try_once()` until its answer (a Decision, or what holds one) admits, sleeping
// each refusal's retry_after, or until that sleep would end after the deadline: then the refusal.
template <class TryOnce>
auto retriedUntil(Deadline deadline, TryOnce&& try_once) {
  for (;;) {
    auto answer = try_once();
    const Decision& decision = decisionIn(answer);
    if (decision.allowed || std::chrono::steady_clock::now() + decision.retry_after > deadline.at()) return answer;
    std::this_thread::sleep_for(decision.retry_after);
  }
}

// acquire, for every limiter.
template <class Limiter>
Decision acquireUntil(Limiter& limiter, std::string_view key, std::int64_t cost, const Limit& limit,
                      Deadline deadline) {
  return retriedUntil(deadline, [&] { return limiter.tryAcquire(key, cost, limit); });
}

}  // namespace detail
}  // namespace swl
