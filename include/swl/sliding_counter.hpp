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
// A CounterLimiter (counter_limiter.hpp): everything but the script is shared with the other algorithms.

#include <swl/counter_limiter.hpp>
#include <swl/key_policy.hpp>
#include <swl/sliding_counter_script.hpp>

#include <string_view>

namespace swl {
namespace detail {

struct SlidingCounter {
  static constexpr std::string_view kName = "swl::SlidingCounterLimiter";
  static constexpr std::string_view kScriptName = "sliding_counter";
  static constexpr std::string_view kScript = kSlidingCounterScript;
  static constexpr bool kCountsTimesWindow = true;
};

}  // namespace detail

template <class KeyPolicy = PrefixKey>
using SlidingCounterLimiter = CounterLimiter<detail::SlidingCounter, KeyPolicy>;

}  // namespace swl
