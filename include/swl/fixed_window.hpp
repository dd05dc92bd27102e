#pragma once
// FixedWindowLimiter: a counter per fixed window (the seed articles' "rolling window").
//
//   swl::FixedWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
//   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
//
// Windows start at multiples of the window since the epoch, on Redis's clock. A request is admitted
// iff the units admitted in the current window plus its cost fit the limit. One small hash per key
// whatever the limit, the cheapest script of all; but a burst at the end of one window and another at
// the start of the next admit up to twice the limit within one window's length.
//
// A CounterLimiter (counter_limiter.hpp): everything but the script is shared with the other algorithms.

#include <swl/counter_limiter.hpp>
#include <swl/fixed_window_script.hpp>
#include <swl/key_policy.hpp>

#include <string_view>

namespace swl {
namespace detail {

struct FixedWindow {
  static constexpr std::string_view kName = "swl::FixedWindowLimiter";
  static constexpr std::string_view kScriptName = "fixed_window";
  static constexpr std::string_view kScript = kFixedWindowScript;
  static constexpr bool kCountsTimesWindow = false;
};

}  // namespace detail

template <class KeyPolicy = PrefixKey>
using FixedWindowLimiter = CounterLimiter<detail::FixedWindow, KeyPolicy>;

}  // namespace swl
