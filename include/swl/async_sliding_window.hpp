#pragma once
// AsyncSlidingWindowLimiter: the sliding window log for event-loop services, over an AsyncConnection.
// The same script, policies, options and decisions as SlidingWindowLimiter; the answer comes to a
// callback on the loop instead of a return value, so many decisions can be in flight at once.
//
//   limiter.tryAcquire("user:42", 1, [](swl::Outcome outcome) {
//     if (!outcome.ok()) return log(outcome.error);     // only with FailurePolicy::throw_error
//     if (!outcome.decision) return reply429(outcome.decision.retry_after);
//     serve();
//   });
//
// The callback runs exactly once, on the loop, never inside tryAcquire; when Redis cannot answer it
// gets the failure policy's decision (or, for throw_error, the error in Outcome::error). A request no
// limit could take (empty key, cost out of range) throws InvalidArgument from tryAcquire itself.
// Callbacks share the limiter's rules, so they may outlive the limiter itself (an AsyncConnection that
// is destroyed after it still answers the calls in flight). Needs the CMake target swl::async.

#include <swl/async_connection.hpp>
#include <swl/detail/event_timer.hpp>
#include <swl/detail/limiter_rules.hpp>
#include <swl/key_policy.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/member_policy.hpp>
#include <swl/outcome.hpp>
#include <swl/sliding_window.hpp>
#include <swl/ttl_policy.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace swl {

template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class AsyncSlidingWindowLimiter {
 public:
  using Callback = std::function<void(Outcome)>;

  AsyncSlidingWindowLimiter(AsyncConnection& redis, Limit limit, LimiterOptions options = {},
                            KeyPolicy keys = KeyPolicy(), MemberPolicy members = MemberPolicy(),
                            TtlPolicy ttl = TtlPolicy())
      : redis_(&redis),
        rules_(
            std::make_shared<Rules>(limit, std::move(options), std::move(keys), std::move(members), std::move(ttl))) {}

  void tryAcquire(std::string_view key, std::int64_t cost, Callback done) {
    if (!done) throw InvalidArgument("swl::AsyncSlidingWindowLimiter::tryAcquire: the callback is empty");
    const auto request = rules_->prepare(key, cost);
    redis_->run(request.call(), [rules = rules_, cost, shard = request.shard(), done = std::move(done)](
                                    const redisReply* reply, std::exception_ptr error) {
      Outcome outcome;
      if (!error) {
        try {
          outcome.decision = rules->decide(*reply, shard);
        } catch (const Error&) {
          error = std::current_exception();
        }
      }
      if (error) outcome = rules->failed(cost, std::move(error));
      done(std::move(outcome));
    });
  }

  void tryAcquire(std::string_view key, Callback done) { tryAcquire(key, 1, std::move(done)); }

  // BasicLimiter::acquire's twin for the loop: tries, and while refused waits retry_after on a loop
  // timer (the loop keeps serving everything else) and tries again. `done` gets the admitting decision,
  // the last refusal as soon as its retry_after would end after `deadline`, or the error. Unlike
  // tryAcquire's callbacks, an acquire in progress needs the limiter to outlive it.
  void acquire(std::string_view key, std::int64_t cost, std::chrono::steady_clock::time_point deadline, Callback done) {
    tryAcquire(key, cost, [this, key = std::string(key), cost, deadline, done = std::move(done)](Outcome outcome) {
      const std::chrono::microseconds retry_after = outcome.decision.retry_after;
      if (!outcome.ok() || outcome.decision.allowed || std::chrono::steady_clock::now() + retry_after > deadline) {
        return done(std::move(outcome));
      }
      const bool waiting = detail::runAfter(redis_->loop(), retry_after,
                                            [this, key, cost, deadline, done] { acquire(key, cost, deadline, done); });
      if (!waiting) done(std::move(outcome));
    });
  }

  const Limit& limit() const noexcept { return rules_->limit(); }
  std::string redisKey(std::string_view key, std::size_t shard = 0) const { return rules_->redisKey(key, shard); }

 private:
  using Rules = detail::LimiterRules<detail::SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy>;

  AsyncConnection* redis_;
  std::shared_ptr<Rules> rules_;
};

}  // namespace swl
