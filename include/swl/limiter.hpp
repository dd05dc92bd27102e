#pragma once
/// \file
/// The limiter contract: what every limiter in swl promises, whatever decides behind it (Redis through any
/// algorithm, this process's memory, or a composite of limiters); the check that a type keeps it, member
/// by member; and LimiterFace, the one implementation of its public methods, over the core of each
/// limiter (what they all do around a decision is in detail/limiter/reporting.hpp).
///
/// A limiter offers
///
///   Decision tryAcquire(std::string_view key, std::int64_t cost = 1);
///       `cost` units for `key`, admitted iff they fit in the limit now. A request no limit could take
///       (empty key, cost outside 1..limit) throws InvalidArgument before anything is sent. When Redis
///       cannot decide, the failure policy answers (Decision::tier says so), or, under
///       FailurePolicy::throw_error, the swl::Error is thrown. In shadow mode (Enforcement::shadow) a
///       refusal is admitted and marked Decision::shadow_rejected.
///   Decision tryAcquire(std::string_view key, std::int64_t cost, const Limit& limit);
///       The same under a limit chosen for this call (a tenant's plan) instead of the limiter's own; a
///       limit no limiter could hold throws InvalidArgument. The key's state is one whatever limit a call
///       brings: docs/limits.md ("Limits per tenant") says what a key's changed limit does.
///   std::vector<Outcome> tryAcquireMany(const std::vector<AcquireRequest>& requests);
///       Each request decided as tryAcquire would, one after another in input order, in as few round
///       trips as the limiter can; a failure spoils only its own Outcome.
///   Decision acquire(std::string_view key, std::int64_t cost, [const Limit& limit,] Deadline deadline);
///       Waits to be admitted: tries, and while refused sleeps retry_after (never spinning) and tries
///       again. Returns the admitting decision, or the last refusal as soon as its retry_after would end
///       after the deadline, so it never sleeps in vain. A deadline is a steady_clock time or a duration.
///   Usage peek(std::string_view key [, const Limit& limit]);   what the key has used, recording nothing;
///                                                              errors are thrown
///   bool reset(std::string_view key);       forgets the key: whether there was anything; errors are thrown
///   const Limit& limit() const;
///   void validate(std::string_view key, std::int64_t cost [, const Limit& limit]) const;
///       throws what tryAcquire would for bad input
///
/// and, for composites (limiters made of limiters), the same decisions without the observer and the
/// failure policy, which only the outermost limiter applies:
///
///   Decision decide(std::string_view key, std::int64_t cost [, const Limit& limit]);   throws swl::Error
///   std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests);     errors in the Outcomes
///
/// A batch's AcquireRequest may carry its own limit, as a call may.
///
/// Every decision and every error of tryAcquire and tryAcquireMany reaches the observer exactly once.
/// Thread safety: a Redis limiter is as safe as its RedisClient; the in-memory limiters and tiers lock.
/// MultiLimiter (several limits, one decision) and the async limiters (the answer comes to a callback)
/// keep the same promises in their own shape; their headers say how. `swl::isLimiter<L>` tells whether L
/// keeps the shape at compile time, and `static_assert(swl::keepsLimiterContract<L>())` names each member
/// it lacks.

#include <swl/decision.hpp>
#include <swl/detail/limiter/contract.hpp>
#include <swl/detail/limiter/face_helpers.hpp>
#include <swl/detail/limiter/reporting.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace swl {

/// When acquire() gives up: a point on the steady clock, or a duration from now.
class Deadline {
 public:
  /// Implicit, so that acquire(key, cost, 2s) and acquire(key, cost, steady_clock::now() + 2s) both read well.
  Deadline(std::chrono::steady_clock::time_point at) : at_(at) {}
  /// `timeout` from now, rounded up to the steady clock's resolution, so it never ends early.
  template <class Rep, class Period>
  Deadline(std::chrono::duration<Rep, Period> timeout)
      : at_(std::chrono::steady_clock::now() + std::chrono::ceil<std::chrono::steady_clock::duration>(timeout)) {}

  /// The point on the steady clock.
  std::chrono::steady_clock::time_point at() const noexcept { return at_; }

 private:
  std::chrono::steady_clock::time_point at_;
};

/// Whether L keeps the shape of the contract above (its meaning is for the tests to show).
template <class L>
inline constexpr bool isLimiter = [] {
  using namespace detail::contract;
  return gives<TryAcquire, L, Decision> && gives<TryAcquireUnder, L, Decision> &&
         gives<TryAcquireMany, L, std::vector<Outcome>> && gives<Acquire, L, Decision> &&
         gives<AcquireUnder, L, Decision> && gives<Peek, L, Usage> && gives<PeekUnder, L, Usage> &&
         gives<Reset, L, bool> && gives<LimitOf, L, const Limit&> && gives<Validate, L, void> &&
         gives<ValidateUnder, L, void> && gives<Decide, L, Decision> && gives<DecideUnder, L, Decision> &&
         gives<DecideMany, L, std::vector<Outcome>>;
}();

/// What a limiter's core supplies to LimiterFace (below), checked member by member: the part of the
/// contract that differs from one limiter to another.
template <class Core>
constexpr bool keepsLimiterCoreContract() {
  using namespace detail::contract;
  static_assert(gives<DecideUnder, Core, Decision>,
                "a limiter's core needs Decision decide(std::string_view key, std::int64_t cost, const Limit&) "
                "(swl/limiter.hpp, LimiterFace)");
  static_assert(gives<DecideMany, Core, std::vector<Outcome>>,
                "a limiter's core needs std::vector<Outcome> decideMany(const std::vector<AcquireRequest>&)");
  static_assert(gives<PeekUnder, Core, Usage>, "a limiter's core needs Usage peek(std::string_view key, const Limit&)");
  static_assert(gives<Reset, Core, bool>, "a limiter's core needs bool reset(std::string_view key)");
  static_assert(gives<LimitOf, Core, const Limit&>, "a limiter's core needs const Limit& limit() const");
  static_assert(gives<ValidateUnder, Core, void>,
                "a limiter's core needs void validate(std::string_view key, std::int64_t cost, const Limit&) const");
  return true;
}

/// The whole contract, failing with one message per member L lacks (or gives the wrong type from): what
/// its core supplies, and what LimiterFace adds. `static_assert(swl::keepsLimiterContract<MyLimiter>());`
template <class L>
constexpr bool keepsLimiterContract() {
  using namespace detail::contract;
  keepsLimiterCoreContract<L>();
  static_assert(gives<TryAcquire, L, Decision>,
                "a limiter needs Decision tryAcquire(std::string_view key, std::int64_t cost) (swl/limiter.hpp)");
  static_assert(gives<TryAcquireUnder, L, Decision>,
                "a limiter needs Decision tryAcquire(std::string_view key, std::int64_t cost, const Limit&)");
  static_assert(gives<TryAcquireMany, L, std::vector<Outcome>>,
                "a limiter needs std::vector<Outcome> tryAcquireMany(const std::vector<AcquireRequest>&)");
  static_assert(gives<Acquire, L, Decision>,
                "a limiter needs Decision acquire(std::string_view key, std::int64_t cost, Deadline)");
  static_assert(gives<AcquireUnder, L, Decision>,
                "a limiter needs Decision acquire(std::string_view key, std::int64_t cost, const Limit&, Deadline)");
  static_assert(gives<Peek, L, Usage>, "a limiter needs Usage peek(std::string_view key)");
  static_assert(gives<Validate, L, void>,
                "a limiter needs void validate(std::string_view key, std::int64_t cost) const");
  static_assert(gives<Decide, L, Decision>,
                "a limiter needs Decision decide(std::string_view key, std::int64_t cost) for composites");
  return isLimiter<L>;
}

/// The contract's public methods, written once for every limiter, over a core that supplies only what
/// differs (as robin_map is a thin face over robin_hash). A limiter is LimiterFace<its core>, and its core
/// has
///
///   Decision decide(std::string_view key, std::int64_t cost, const Limit& limit);   throws swl::Error
///   std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests);   errors in the Outcomes
///   Usage peek(std::string_view key, const Limit& limit);
///   bool reset(std::string_view key);
///   const Limit& limit() const;
///   void validate(std::string_view key, std::int64_t cost, const Limit& limit) const;
///   detail::Reporting reporting() const;   its observer, failure policy, tier and enforcement (may be
///                                          protected)
///
/// and whatever else it offers (reserve, settle, the Redis key of a key, ...), which the face passes on.
/// The face decides through the core and reports through detail/limiter/reporting.hpp; neither calls it back.
/// Here, once for every limiter: the access list answers the keys it lists, the observer sees every
/// decision and error exactly once, the failure policy answers what Redis could not, and shadow mode turns
/// refusals into marked admissions.
///
/// A core whose tiers may answer in place of a failed one (TieredLimiter's insurance) also has
/// `static constexpr bool kAnswersForFailures = true` and decides through
/// decideKeepingCause(key, cost, limit, cause) and decideManyKeepingCauses(requests, causes) (may be
/// protected): each failure an answer stood in for still reaches the observer.
template <class Core>
class LimiterFace : public Core {
  static_assert(keepsLimiterCoreContract<Core>());

 public:
  using Core::Core;
  using Core::decide, Core::peek, Core::validate;

  /// `cost` units for `key`, admitted iff they fit in the limit now (the contract above says the rest).
  Decision tryAcquire(std::string_view key, std::int64_t cost = 1) { return tryAcquire(key, cost, this->limit()); }

  /// tryAcquire under a limit chosen for this call (a tenant's plan) rather than the limiter's own.
  Decision tryAcquire(std::string_view key, std::int64_t cost, const Limit& limit) {
    const detail::Reporting reporting = this->reporting();
    const detail::ReportedCall call(reporting, key, cost, limit);
    try {
      if (const std::optional<Decision> listed = detail::accessListAnswer(reporting.access, key, limit)) {
        Core::validate(key, cost, limit);
        return call.report(*listed);
      }
      if constexpr (detail::AnswersForFailures<Core>::value) {
        std::exception_ptr cause;
        const Decision decision = Core::decideKeepingCause(key, cost, limit, cause);
        return call.report(decision, cause);
      } else {
        return call.report(Core::decide(key, cost, limit));
      }
    } catch (const Error&) {
      return call.reportFailure(std::current_exception());
    }
  }

  /// Requests the access list answers are answered here; the rest go to the core as one batch.
  std::vector<Outcome> tryAcquireMany(const std::vector<AcquireRequest>& requests) {
    const detail::Reporting reporting = this->reporting();
    const detail::ReportedBatch batch(reporting, requests, this->limit());
    const detail::ListedBatch listed(
        reporting.access, requests, this->limit(),
        [this](std::string_view key, std::int64_t cost, const Limit& limit) { Core::validate(key, cost, limit); });
    if (!listed.any()) {
      std::vector<std::exception_ptr> causes(requests.size());
      std::vector<Outcome> outcomes = decideBatch(requests, causes);
      return batch.report(std::move(outcomes), std::move(causes));
    }
    std::vector<std::exception_ptr> causes(listed.rest().size());
    std::vector<Outcome> outcomes = decideBatch(listed.rest(), causes);
    return batch.report(listed.merge(std::move(outcomes)), listed.merge(std::move(causes)));
  }

  /// Waits to be admitted, sleeping each refusal's retry_after, until the deadline; never sleeps in vain.
  Decision acquire(std::string_view key, std::int64_t cost, Deadline deadline) {
    return acquire(key, cost, this->limit(), deadline);
  }
  /// acquire under a limit chosen for this call.
  Decision acquire(std::string_view key, std::int64_t cost, const Limit& limit, Deadline deadline) {
    return detail::retriedUntil(deadline.at(), [&] { return tryAcquire(key, cost, limit); });
  }

  /// The decision without the observer and the failure policy, for composites: throws swl::Error.
  Decision decide(std::string_view key, std::int64_t cost) { return Core::decide(key, cost, this->limit()); }
  /// What `key` has used of the limiter's own limit, recording nothing; errors are thrown.
  Usage peek(std::string_view key) { return Core::peek(key, this->limit()); }
  /// Throws what tryAcquire would for bad input.
  void validate(std::string_view key, std::int64_t cost) const { Core::validate(key, cost, this->limit()); }

 private:
  // The core's batch; `causes[i]`: a failure a tier answered request i in place of, if any.
  std::vector<Outcome> decideBatch(const std::vector<AcquireRequest>& requests,
                                   std::vector<std::exception_ptr>& causes) {
    if constexpr (detail::AnswersForFailures<Core>::value) {
      return Core::decideManyKeepingCauses(requests, causes);
    } else {
      return Core::decideMany(requests);
    }
  }
};

}  // namespace swl
