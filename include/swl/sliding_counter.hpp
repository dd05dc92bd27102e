#pragma once
// SlidingCounterLimiter: the approximate sliding window (two weighted fixed buckets).
//
//   swl::SlidingCounterLimiter<> limiter(connection, swl::Limit{1'000'000, std::chrono::minutes(1)});
//   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
//
// For limits too large for a log (a million per minute would be a million ZSET entries per key): one
// small hash per key whatever the limit. The units of the sliding window are estimated from the
// current bucket and the previous one, weighted by how much of it the window still covers, as if its
// units had come evenly. Even traffic is judged almost exactly; a burst at the very end of a bucket is
// undercounted as it slides out, so a window can admit more than the limit (measured in the README).
// Needs limit * window (in microseconds) below 2^53.
//
// Same key policies, clocks, failure policies and connections as SlidingWindowLimiter; batches,
// acquire, peek and reset are BasicLimiter's. README "Algorithms" compares them, measured.

#include <swl/basic_limiter.hpp>
#include <swl/detail/limiter_rules.hpp>
#include <swl/detail/script_prelude.hpp>
#include <swl/key_policy.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/redis_client.hpp>
#include <swl/script.hpp>
#include <swl/sliding_counter_script.hpp>
#include <swl/ttl_policy.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace swl {
namespace detail {

struct SlidingCounter {
  static constexpr std::string_view kName = "swl::SlidingCounterLimiter";
  static const Script& script() {
    static const std::string text = std::string(kScriptPrelude).append(kSlidingCounterScript);
    static const Script sliding_counter("sliding_counter", text);
    return sliding_counter;
  }
  static void check(const Limit& limit) { checkScaledExact(limit, kName); }
};

}  // namespace detail

template <class KeyPolicy = PrefixKey>
class SlidingCounterLimiter
    : public BasicLimiter<detail::LimiterRules<detail::SlidingCounter, KeyPolicy, detail::NoMember, WindowTtl>> {
 public:
  SlidingCounterLimiter(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy())
      : SlidingCounterLimiter::BasicLimiter(redis, limit, std::move(options), std::move(keys), detail::NoMember(),
                                            WindowTtl()) {}

  static const Script& script() { return detail::SlidingCounter::script(); }
};

}  // namespace swl
