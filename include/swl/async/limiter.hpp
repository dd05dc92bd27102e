#pragma once
/// \file
/// AsyncLimiter: any algorithm's limiter for event-loop services, over an AsyncConnection. The same
/// scripts, policies, options and decisions as RedisLimiter; the answer comes to a callback on the loop
/// instead of a return value, so many decisions can be in flight at once.
///
///   swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{100, std::chrono::seconds(10)});
///   limiter.tryAcquire("user:42", 1, [](swl::Outcome outcome) {
///     if (!outcome.ok()) return log(outcome.error);     // only with FailurePolicy::throw_error
///     if (!outcome.decision) return reply429(outcome.decision.retry_after);
///     serve();
///   });
///
/// The limiter contract (limiter.hpp) in callback form: the callback runs exactly once, on the loop,
/// never inside tryAcquire; when Redis cannot answer it gets the failure policy's decision (or, for
/// throw_error, the error in Outcome::error). A request no limit could take (empty key, cost out of
/// range) throws InvalidArgument from tryAcquire itself. The observer sees every decision and error, on
/// the loop, just before the callback. Callbacks share the limiter's state, so they may outlive the
/// limiter itself (an AsyncConnection destroyed after it still answers the calls in flight). Needs the
/// CMake target swl::async.

#include <swl/algorithms/sliding_window.hpp>
#include <swl/async/connection.hpp>
#include <swl/decision.hpp>
#include <swl/detail/io/event_timer.hpp>
#include <swl/detail/script/calls.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/limiter.hpp>
#include <swl/options.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace swl {

/// Any algorithm's limiter over an AsyncConnection, answering on the loop through callbacks (the limiter
/// contract of limiter.hpp in callback form; async/limiter.hpp says what it promises).
template <class Algorithm, class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class AsyncLimiter {
 public:
  /// Gets each call's Outcome: a decision, or, under FailurePolicy::throw_error, the error.
  using Callback = std::function<void(Outcome)>;

  /// A limiter of `limit` over `redis`, which must outlive it. LimiterOptions::access is not taken: it
  /// throws InvalidArgument.
  AsyncLimiter(AsyncConnection& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy(),
               MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : redis_(&redis),
        calls_(std::make_shared<Calls>(limit, std::move(options), std::move(keys), std::move(members), std::move(ttl),
                                       Algorithm())) {
    if (calls_->options().access) {
      throw InvalidArgument(std::string(Algorithm::kName) +
                            ": LimiterOptions::access is not taken by the async limiter; ask the list "
                            "(AccessList::listingOf) before tryAcquire");
    }
  }

  /// `cost` units for `key` under the limiter's own limit; `done` gets the decision on the loop.
  void tryAcquire(std::string_view key, std::int64_t cost, Callback done) {
    tryAcquire(key, cost, limit(), std::move(done));
  }

  /// Under a limit chosen for this call (a tenant's plan), as RedisLimiter::tryAcquire(key, cost, limit).
  void tryAcquire(std::string_view key, std::int64_t cost, const Limit& limit, Callback done) {
    if (!done) throw InvalidArgument(std::string(Algorithm::kName) + "::tryAcquire: the callback is empty");
    const detail::Observation observation(calls_->options().observer, Tier::redis);
    std::optional<typename Calls::Request> request;
    try {
      request.emplace(*calls_, key, cost, limit);
    } catch (const InvalidArgument&) {
      observation.report(key, cost, nullptr, std::current_exception());
      throw;
    }
    redis_->run(request->call(), [calls = calls_, observation, key = std::string(key), cost, limit,
                                  done = std::move(done)](ReplyView reply, std::exception_ptr error) {
      const LimiterOptions& options = calls->options();
      Outcome outcome = detail::reported(detail::outcomeOf(reply, std::move(error), limit.max_requests),
                                         options.on_failure, options.enforcement, observation, key, cost, limit);
      done(std::move(outcome));
    });
  }

  /// One unit for `key`.
  void tryAcquire(std::string_view key, Callback done) { tryAcquire(key, 1, std::move(done)); }

  /// acquire's twin for the loop: tries, and while refused waits retry_after on a loop timer (the loop
  /// keeps serving everything else) and tries again. `done` gets the admitting decision, the last
  /// refusal as soon as its retry_after would end after `deadline`, or the error. Unlike tryAcquire's
  /// callbacks, an acquire in progress needs the limiter to outlive it.
  void acquire(std::string_view key, std::int64_t cost, Deadline deadline, Callback done) {
    tryAcquire(key, cost, [this, key = std::string(key), cost, deadline, done = std::move(done)](Outcome outcome) {
      const std::chrono::microseconds retry_after = outcome.decision.retry_after;
      if (!outcome.ok() || outcome.decision.allowed || std::chrono::steady_clock::now() + retry_after > deadline.at()) {
        return done(std::move(outcome));
      }
      const bool waiting = detail::runAfter(redis_->loop(), retry_after,
                                            [this, key, cost, deadline, done] { acquire(key, cost, deadline, done); });
      if (!waiting) done(std::move(outcome));
    });
  }

  /// The limiter's own limit.
  const Limit& limit() const noexcept { return calls_->limit(); }
  /// The Redis key that holds `key`'s state, for operators and tests.
  std::string redisKey(std::string_view key) const { return calls_->redisKey(key); }

 private:
  using Calls = detail::LimiterCalls<Algorithm, KeyPolicy, MemberPolicy, TtlPolicy>;

  AsyncConnection* redis_;
  std::shared_ptr<Calls> calls_;
};

/// The exact sliding window log for event-loop services.
template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using AsyncSlidingWindowLimiter = AsyncLimiter<SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy>;

}  // namespace swl
