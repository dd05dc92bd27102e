#pragma once
// What every limiter does alike around its decisions: check a request, answer for a Redis that could not
// (the failure policy), carry out or only mark a refusal (shadow mode), and report each decision and
// error to the observer once. The one place those happen: LimiterFace (limiter.hpp) applies them for
// every limiter, and the limiters of other shapes (MultiLimiter, ConcurrencyLimiter, the async limiter)
// call the same helpers.

#include <swl/access_list.hpp>
#include <swl/decision.hpp>
#include <swl/detail/holds_error.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/error.hpp>
#include <swl/observer.hpp>
#include <swl/options.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {
namespace detail {

// The answers Redis does not give are named for who gives them: failurePolicyAnswer (Redis could not
// decide), accessListAnswer (the operator's lists decided first); MultiLimiter's give one per rule
// (failurePolicyAnswers, accessListAnswers). Decision::tier tells a caller which one answered.

// No count to go by: ask the caller back after a second, or sooner for a shorter window.
inline Decision blindRefusal(const Limit& limit) {
  Decision decision;
  decision.limit = limit.max_requests;
  decision.retry_after = std::min<std::chrono::microseconds>(limit.window, std::chrono::seconds(1));
  decision.reset_after = decision.retry_after;
  decision.tier = Tier::fail_closed;
  return decision;
}

// The failure policy: what a request of `cost` gets when no tier could decide it because of `error`.
// Invalid input (and a call the client refused to send, such as keys in two cluster slots) is the
// caller's mistake and stays an error whatever the policy: failing open on it would hide it.
inline Outcome failurePolicyAnswer(FailurePolicy policy, const Limit& limit, std::int64_t cost,
                                   std::exception_ptr error) {
  if (policy == FailurePolicy::throw_error || holdsError<InvalidArgument>(error))
    return {blindRefusal(limit), std::move(error)};
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
    event.verdict = decision == nullptr         ? Verdict::error
                    : decision->shadow_rejected ? Verdict::shadow_rejected
                    : decision->allowed         ? Verdict::allowed
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
  decision.shadow_rejected = true;
}

inline void enforce(Enforcement enforcement, Outcome& outcome) noexcept {
  if (outcome.ok()) enforce(enforcement, outcome.decision);
}

// A call's Outcome as a limiter answering through a callback reports it: an error answered by the failure
// policy, shadow mode, the observer told once.
inline Outcome reported(Outcome outcome, FailurePolicy on_failure, Enforcement enforcement,
                        const Observation& observation, std::string_view key, std::int64_t cost, const Limit& limit) {
  const std::exception_ptr error = outcome.error;
  if (error) outcome = failurePolicyAnswer(on_failure, limit, cost, error);
  enforce(enforcement, outcome);
  observation.report(key, cost, outcome, error);
  return outcome;
}

// Who watches a limiter, who answers for it when Redis cannot, whether its refusals are carried out, and
// which keys it answers without deciding: what LimiterFace and the two reporters below apply.
struct Reporting {
  const Observer& observer;
  FailurePolicy on_failure = FailurePolicy::throw_error;
  Tier asked = Tier::redis;
  Enforcement enforcement = Enforcement::enforce;
  const AccessList* access = nullptr;
};

// How a limiter deciding on Redis under `options` reports: one place, for every such core.
inline Reporting reportingOf(const LimiterOptions& options) {
  return {options.observer, options.on_failure, Tier::redis, options.enforcement, options.access.get()};
}

// What the access list (access_list.hpp) answers for `key` under `limit`, if it answers: an allowed key
// is admitted with the whole limit left, a denied one refused until the operator lifts it (the caller is
// asked back after a window).
inline Decision accessListAnswer(Listing listing, const Limit& limit) {
  Decision decision;
  decision.limit = limit.max_requests;
  if (listing == Listing::allowed) {
    decision.allowed = true;
    decision.remaining = limit.max_requests;
    decision.tier = Tier::allow_list;
  } else {
    decision.retry_after = limit.window;
    decision.reset_after = limit.window;
    decision.tier = Tier::deny_list;
  }
  return decision;
}

// The same for `key`, if the list names it.
inline std::optional<Decision> accessListAnswer(const AccessList* access, std::string_view key, const Limit& limit) {
  if (access == nullptr) return std::nullopt;
  const Listing listing = access->listingOf(key);
  if (listing == Listing::unlisted) return std::nullopt;
  return accessListAnswer(listing, limit);
}

// A batch as the access list splits it: the requests it answers, and the rest, which the limiter decides
// in one batch of their own. `validate(key, cost, limit)` throws for a request tryAcquire would refuse,
// listed or not: bad input is an error whatever the lists say.
class ListedBatch {
 public:
  template <class Validate>
  ListedBatch(const AccessList* access, const std::vector<AcquireRequest>& requests, const Limit& limit,
              Validate&& validate) {
    if (access == nullptr) return;
    answers_.resize(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const Limit& own = requests[i].limitOr(limit);
      const std::optional<Decision> listed = accessListAnswer(access, requests[i].key, own);
      if (!listed) continue;
      any_ = true;
      try {
        validate(requests[i].key, requests[i].cost, own);
        answers_[i].emplace(Outcome{*listed, nullptr});
      } catch (const Error&) {
        answers_[i].emplace(Outcome{blindRefusal(own), std::current_exception()});
      }
    }
    if (!any_) return;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (!answers_[i]) rest_.push_back(requests[i]);
    }
  }

  // Whether the lists answered any request; when none did, the batch goes to the limiter whole.
  bool any() const noexcept { return any_; }
  const std::vector<AcquireRequest>& rest() const noexcept { return rest_; }

  // The whole batch's outcomes (or causes) in input order: the lists' answers, and `of_rest` for the rest.
  std::vector<Outcome> merge(std::vector<Outcome> of_rest) const {
    return merged<Outcome>(std::move(of_rest), [](const Outcome& answer) { return answer; });
  }
  std::vector<std::exception_ptr> merge(std::vector<std::exception_ptr> of_rest) const {
    return merged<std::exception_ptr>(std::move(of_rest), [](const Outcome&) { return std::exception_ptr(); });
  }

 private:
  template <class T, class OfAnswer>
  std::vector<T> merged(std::vector<T> of_rest, OfAnswer&& of_answer) const {
    std::vector<T> all(answers_.size());
    std::size_t next = 0;
    for (std::size_t i = 0; i < answers_.size(); ++i) {
      all[i] = answers_[i] ? of_answer(*answers_[i]) : std::move(of_rest[next++]);
    }
    return all;
  }

  std::vector<std::optional<Outcome>> answers_;
  std::vector<AcquireRequest> rest_;
  bool any_ = false;
};

// One call reported, for every limiter: made before the limiter decides (it times the call), then told
// the decision or the failure, it applies the failure policy and shadow mode and tells the observer once.
// The limiter calls it and it returns: it never calls the limiter back.
//
//   const ReportedCall call(reporting(), key, cost, limit);
//   try {
//     return call.report(decide(key, cost, limit));
//   } catch (const Error&) {
//     return call.reportFailure(std::current_exception());
//   }
class ReportedCall {
 public:
  ReportedCall(const Reporting& reporting, std::string_view key, std::int64_t cost, const Limit& limit)
      : reporting_(reporting),
        observation_(reporting.observer, reporting.asked),
        key_(key),
        cost_(cost),
        limit_(limit) {}

  // The limiter decided; `cause` is a failure a tier answered in place of (insurance), if any.
  Decision report(Decision decision, const std::exception_ptr& cause = nullptr) const {
    enforce(reporting_.enforcement, decision);
    observation_.report(key_, cost_, &decision, cause);
    return decision;
  }

  // The limiter failed with `error`: the failure policy's answer, or, under throw_error (and for invalid
  // input, whatever the policy), the error thrown again.
  Decision reportFailure(const std::exception_ptr& error) const {
    Outcome outcome = failurePolicyAnswer(reporting_.on_failure, limit_, cost_, error);
    enforce(reporting_.enforcement, outcome);
    observation_.report(key_, cost_, outcome, error);
    return outcome.value();
  }

 private:
  Reporting reporting_;  // a copy: limiters make theirs for the call; it views their observer
  Observation observation_;
  std::string_view key_;
  std::int64_t cost_;
  Limit limit_;
};

// A batch reported (tryAcquireMany), alike: made before the limiter decides the batch, then told its
// Outcomes. Each error the failure policy may answer; `causes[i]` is a failure a tier answered request
// i in place of (insurance), if any. Each request is reported with the whole batch's latency.
class ReportedBatch {
 public:
  ReportedBatch(const Reporting& reporting, const std::vector<AcquireRequest>& requests, const Limit& limit)
      : reporting_(reporting), observation_(reporting.observer, reporting.asked), requests_(requests), limit_(limit) {}

  std::vector<Outcome> report(std::vector<Outcome> outcomes, std::vector<std::exception_ptr> causes = {}) const {
    causes.resize(requests_.size());
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      const AcquireRequest& request = requests_[i];
      if (outcomes[i].error) {
        causes[i] = outcomes[i].error;
        outcomes[i] = failurePolicyAnswer(reporting_.on_failure, request.limitOr(limit_), request.cost, causes[i]);
      }
      enforce(reporting_.enforcement, outcomes[i]);
      observation_.report(request.key, request.cost, outcomes[i], causes[i]);
    }
    return outcomes;
  }

 private:
  Reporting reporting_;
  Observation observation_;
  const std::vector<AcquireRequest>& requests_;
  Limit limit_;
};

}  // namespace detail
}  // namespace swl
