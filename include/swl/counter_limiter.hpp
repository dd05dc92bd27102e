#pragma once
// CounterLimiter: one limiter type for the algorithms that keep O(1) state per key (the sliding counter,
// the fixed window, GCRA). Users spell them SlidingCounterLimiter<>, FixedWindowLimiter<> and
// GcraLimiter<>; each of those headers brings a Counter:
//     static constexpr std::string_view kName;        // "swl::FixedWindowLimiter", for error messages
//     static constexpr std::string_view kScriptName;  // "fixed_window"
//     static constexpr std::string_view kScript;      // its script, run after the shared prelude
//     static constexpr bool kCountsTimesWindow;       // its script multiplies counts by the window
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
#include <swl/ttl_policy.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace swl {
namespace detail {

// A Counter as LimiterRules takes an algorithm: the prelude and its script as one Script, loaded once.
template <class Counter>
struct PreludedCounter {
  static constexpr std::string_view kName = Counter::kName;
  static const Script& script() {
    static const std::string text = std::string(kScriptPrelude).append(Counter::kScript);
    static const Script script(Counter::kScriptName, text);
    return script;
  }
  static void check(const Limit& limit) {
    if constexpr (Counter::kCountsTimesWindow) checkScaledExact(limit, kName);
  }
};

}  // namespace detail

template <class Counter, class KeyPolicy = PrefixKey>
class CounterLimiter
    : public BasicLimiter<
          detail::LimiterRules<detail::PreludedCounter<Counter>, KeyPolicy, detail::NoMember, WindowTtl>> {
 public:
  CounterLimiter(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy())
      : CounterLimiter::BasicLimiter(redis, limit, std::move(options), std::move(keys), detail::NoMember(),
                                     WindowTtl()) {}

  static const Script& script() { return detail::PreludedCounter<Counter>::script(); }
};

}  // namespace swl
