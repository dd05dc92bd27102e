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
// Same key policies, clocks, failure policies and connections as SlidingWindowLimiter; batches,
// acquire, peek and reset are BasicLimiter's. README "Algorithms" compares them, measured.

#include <swl/basic_limiter.hpp>
#include <swl/detail/limiter_rules.hpp>
#include <swl/detail/script_prelude.hpp>
#include <swl/fixed_window_script.hpp>
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

struct FixedWindow {
  static constexpr std::string_view kName = "swl::FixedWindowLimiter";
  static const Script& script() {
    static const std::string text = std::string(kScriptPrelude).append(kFixedWindowScript);
    static const Script fixed_window("fixed_window", text);
    return fixed_window;
  }
  static void check(const Limit&) {}
};

}  // namespace detail

template <class KeyPolicy = PrefixKey>
class FixedWindowLimiter
    : public BasicLimiter<detail::LimiterRules<detail::FixedWindow, KeyPolicy, detail::NoMember, WindowTtl>> {
 public:
  FixedWindowLimiter(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy())
      : FixedWindowLimiter::BasicLimiter(redis, limit, std::move(options), std::move(keys), detail::NoMember(),
                                         WindowTtl()) {}

  static const Script& script() { return detail::FixedWindow::script(); }
};

}  // namespace swl
