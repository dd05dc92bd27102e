#pragma once
// SlidingWindowLimiter: an exact sliding window log on one Redis key per limited key.
//
//   auto connection = swl::Connection::tcp("127.0.0.1", 6379);
//   swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
//   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
//
// A request of `cost` is admitted iff the entries in (now - window, now] plus `cost` fit in the limit.
// Each tryAcquire is one EVALSHA (see sliding_window_script.hpp), atomic on the server, so any number
// of processes and threads sharing a Redis agree exactly.
//
// Thread safety: as safe as its Connection. A limiter over a single Connection is for one thread at a time.

#include <swl/clock.hpp>
#include <swl/connection.hpp>
#include <swl/detail/decision_reply.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/error.hpp>
#include <swl/key_policy.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/member_policy.hpp>
#include <swl/script.hpp>
#include <swl/sliding_window_script.hpp>
#include <swl/ttl_policy.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace swl {

template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class SlidingWindowLimiter {
 public:
  // Scores are microseconds held in Lua doubles: counts and times must stay below 2^53 to be exact.
  static constexpr std::int64_t kLargestExact = std::int64_t{1} << 53;

  SlidingWindowLimiter(Connection& connection, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy(),
                       MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : connection_(&connection),
        limit_(validated(limit)),
        options_(std::move(options)),
        keys_(std::move(keys)),
        members_(std::move(members)),
        limit_text_(std::to_string(limit.max_requests)),
        window_text_(std::to_string(limit.window.count())),
        ttl_text_(std::to_string(validatedTtl(ttl.ttl(limit.window), limit.window).count())) {}

  Decision tryAcquire(std::string_view key, std::int64_t cost = 1) {
    validateRequest(key, cost);
    const std::string redis_key = keys_.key(key);
    const std::string member = members_.next();
    const detail::IntegerText cost_text(cost);
    // An empty time tells the script to read Redis's own clock.
    const bool redis_time = options_.clock.isRedisTime();
    const detail::IntegerText client_now(redis_time ? 0 : clientNow().count());
    const std::string_view now = redis_time ? std::string_view() : client_now.view();
    const std::string_view count_rejected = options_.rejected == RejectedRequests::counted ? "1" : "0";
    try {
      detail::ReplyPtr reply = script().run(
          *connection_, {redis_key}, {limit_text_, window_text_, cost_text, now, member, ttl_text_, count_rejected});
      return detail::decodeDecision(*reply, limit_.max_requests);
    } catch (const InvalidArgument&) {
      throw;                  // a caller's mistake: no failure policy hides it
    } catch (const Error&) {  // Redis could not decide: ConnectionError or ReplyError
      if (options_.on_failure == FailurePolicy::throw_error) throw;
      return failureDecision(cost);
    }
  }

  const Limit& limit() const noexcept { return limit_; }

  // The Redis key that holds `key`'s window, for operators and tests.
  std::string redisKey(std::string_view key) const { return keys_.key(key); }

  static const Script& script() {
    static const Script sliding_window("sliding_window", kSlidingWindowScript);
    return sliding_window;
  }

 private:
  static Limit validated(Limit limit) {
    if (limit.max_requests <= 0 || limit.max_requests >= kLargestExact) {
      throw InvalidArgument("swl::Limit: max_requests " + std::to_string(limit.max_requests) + " is not in 1..2^53-1");
    }
    if (limit.window.count() <= 0 || limit.window.count() >= kLargestExact) {
      throw InvalidArgument("swl::Limit: window of " + std::to_string(limit.window.count()) +
                            " us is not positive (or not below 2^53 us)");
    }
    return limit;
  }

  static std::chrono::milliseconds validatedTtl(std::chrono::milliseconds ttl, std::chrono::microseconds window) {
    if (ttl < window) {
      throw InvalidArgument("swl: a TTL of " + std::to_string(ttl.count()) + " ms is shorter than the window of " +
                            std::to_string(window.count()) + " us; Redis would drop entries that still count");
    }
    return ttl;
  }

  void validateRequest(std::string_view key, std::int64_t cost) const {
    if (key.empty()) throw InvalidArgument("swl::SlidingWindowLimiter::tryAcquire: the key is empty");
    if (cost <= 0) {
      throw InvalidArgument("swl::SlidingWindowLimiter::tryAcquire: cost " + std::to_string(cost) +
                            " is not positive (key '" + std::string(key) + "')");
    }
    if (cost > limit_.max_requests) {
      throw InvalidArgument("swl::SlidingWindowLimiter::tryAcquire: cost " + std::to_string(cost) +
                            " exceeds the limit of " + std::to_string(limit_.max_requests) +
                            " per window, so it could never be admitted (key '" + std::string(key) + "')");
    }
  }

  std::chrono::microseconds clientNow() const {
    const std::chrono::microseconds now = options_.clock.now();
    if (now.count() < limit_.window.count() || now.count() >= kLargestExact) {
      throw InvalidArgument("swl: the clock reads " + std::to_string(now.count()) +
                            " us, outside the window .. 2^53 us that scores can hold exactly");
    }
    return now;
  }

  Decision failureDecision(std::int64_t cost) const {
    Decision decision;
    decision.limit = limit_.max_requests;
    if (options_.on_failure == FailurePolicy::allow) {
      decision.allowed = true;
      decision.remaining = limit_.max_requests - cost;
      decision.source = DecisionSource::fail_open;
    } else {
      // No count to go by: ask the caller back after a second, or sooner for a shorter window.
      decision.retry_after = std::min<std::chrono::microseconds>(limit_.window, std::chrono::seconds(1));
      decision.reset_after = decision.retry_after;
      decision.source = DecisionSource::fail_closed;
    }
    return decision;
  }

  Connection* connection_;
  Limit limit_;
  LimiterOptions options_;
  KeyPolicy keys_;
  MemberPolicy members_;
  std::string limit_text_;
  std::string window_text_;
  std::string ttl_text_;
};

}  // namespace swl
