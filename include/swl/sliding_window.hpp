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
// Everything else (batches, acquire with a deadline, peek, reset, thread safety) is BasicLimiter's.

#include <swl/basic_limiter.hpp>
#include <swl/detail/limiter_rules.hpp>
#include <swl/key_policy.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/member_policy.hpp>
#include <swl/redis_client.hpp>
#include <swl/script.hpp>
#include <swl/sliding_window_script.hpp>
#include <swl/ttl_policy.hpp>

#include <utility>

namespace swl {
namespace detail {

struct SlidingWindowLog {
  static constexpr std::string_view kName = "swl::SlidingWindowLimiter";
  static const Script& script() {
    static const Script sliding_window("sliding_window", kSlidingWindowScript);
    return sliding_window;
  }
  static void check(const Limit&) {}
};

}  // namespace detail

template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class SlidingWindowLimiter
    : public BasicLimiter<detail::LimiterRules<detail::SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy>> {
 public:
  static constexpr std::int64_t kLargestExact = detail::kLargestExact;

  SlidingWindowLimiter(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy(),
                       MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : SlidingWindowLimiter::BasicLimiter(redis, limit, std::move(options), std::move(keys), std::move(members),
                                           std::move(ttl)) {}

  static const Script& script() { return detail::SlidingWindowLog::script(); }
};

}  // namespace swl
