#pragma once
/// \file
/// FixedWindowLimiter: a counter per fixed window (the seed articles' "rolling window").
///
///   swl::FixedWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// Windows start at multiples of the window since the epoch, on Redis's clock. A request is admitted
/// iff the units admitted in the current window plus its cost fit the limit. One small hash per key
/// whatever the limit, the cheapest script of all; but a burst at the end of one window and another at
/// the start of the next admit up to twice the limit within one window's length.
///
/// The seed articles' INCR counter per window, kept in one hash per key so that a rejected request adds
/// nothing and Redis's clock decides. The script runs after the prelude in redis_limiter.hpp, which reads
/// the arguments; everything around it is RedisLimiter's.

#include <swl/decision.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/period_count.hpp>
#include <swl/policies/keys.hpp>
#include <swl/redis_limiter.hpp>

#include <string_view>

namespace swl {

/// The fixed window (the contract in algorithm.hpp): one counter per key and window.
struct FixedWindow {
  /// The limiter's name, for messages.
  static constexpr std::string_view kName = "swl::FixedWindowLimiter";
  /// The script's name, for messages.
  static constexpr std::string_view kScriptName = "fixed_window";
  /// No member per request: the window keeps a count.
  static constexpr bool kRecordsMembers = false;
  /// Any limit: a count keeps every limit exactly.
  static void check(const Limit&) {}

  /// The decision every count per period makes, run before kScript.
  static constexpr std::string_view kFunctions = detail::kPeriodCount;
  /// Its Lua, run after the prelude and kFunctions (algorithm.hpp).
  static constexpr std::string_view kScript = R"lua(
-- KEYS[1] is a hash: s = the current window's start (microseconds, a multiple of the window since the
-- epoch, so every client agrees where windows begin), c = units admitted in it, w = the window it was
-- counted under (a limit given per call may change it: a count under another window starts afresh).
local start = idiv(now, window) * window
local state = redis.call('HMGET', key, 's', 'c', 'w')
local count = 0
if tonumber(state[1]) == start and (not state[3] or tonumber(state[3]) == window) then count = tonumber(state[2]) end

local answer, counted = decideByCount(count, start + window - now)
if counted then
  redis.call('HSET', key, 's', text(start), 'c', text(counted), 'w', text(window))
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
end
return answer
)lua"sv;
};

/// A counter per fixed window, on Redis.
template <class KeyPolicy = PrefixKey>
using FixedWindowLimiter = RedisLimiter<FixedWindow, KeyPolicy>;

}  // namespace swl
