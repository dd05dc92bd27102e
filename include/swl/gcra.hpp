#pragma once
// GcraLimiter: the generic cell rate algorithm: a token bucket as one time per key.
//
//   swl::GcraLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
//   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
//
// What redis-cell and redis_rate run, and what an API gateway means by "token bucket": a full bucket
// admits a burst of `limit` at once, then units come back one every window/limit, smoothly rather
// than all at once when a window ends. O(1) memory per key (one short string). Over any window at most
// the burst plus what came back in it is admitted, so a window's length can see up to twice the limit
// around a burst (measured in the README). Needs limit * window (in microseconds) below 2^53.
//
// A CounterLimiter (counter_limiter.hpp): everything but the script is shared with the other algorithms.

#include <swl/counter_limiter.hpp>
#include <swl/gcra_script.hpp>
#include <swl/key_policy.hpp>

#include <string_view>

namespace swl {
namespace detail {

struct Gcra {
  static constexpr std::string_view kName = "swl::GcraLimiter";
  static constexpr std::string_view kScriptName = "gcra";
  static constexpr std::string_view kScript = kGcraScript;
  static constexpr bool kCountsTimesWindow = true;
};

}  // namespace detail

template <class KeyPolicy = PrefixKey>
using GcraLimiter = CounterLimiter<detail::Gcra, KeyPolicy>;

}  // namespace swl
