#pragma once
/// \file
/// SlidingCounterLimiter: the approximate sliding window (two weighted fixed buckets).
///
///   swl::SlidingCounterLimiter<> limiter(connection, swl::Limit{1'000'000, std::chrono::minutes(1)});
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// For limits too large for a log (a million per minute would be a million ZSET entries per key): one
/// small hash per key whatever the limit. The units of the sliding window are estimated from the
/// current bucket and the previous one, weighted by how much of it the window still covers, as if its
/// units had come evenly. Even traffic is judged almost exactly; a burst at the very end of a bucket is
/// undercounted as it slides out, so a window can admit more than the limit (measured in docs/algorithms.md).
/// Needs limit * window (in microseconds) below 2^53.
///
/// The script runs after the prelude in redis_limiter.hpp, which reads the arguments; everything around
/// it is RedisLimiter's.

#include <swl/decision.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/policies/keys.hpp>
#include <swl/redis_limiter.hpp>

#include <string_view>

namespace swl {

/// The approximate sliding window (the contract in algorithm.hpp): two weighted fixed buckets.
struct SlidingCounter {
  /// The limiter's name, for messages.
  static constexpr std::string_view kName = "swl::SlidingCounterLimiter";
  /// The script's name, for messages.
  static constexpr std::string_view kScriptName = "sliding_counter";
  /// No member per request: the buckets keep counts.
  static constexpr bool kRecordsMembers = false;
  /// Throws InvalidArgument when limit x window reaches 2^53 microseconds, past what Lua counts exactly.
  static void check(const Limit& limit) { detail::checkScaledExact(limit, kName); }

  /// Its Lua, run after the prelude (algorithm.hpp).
  static constexpr std::string_view kScript = R"lua(
-- KEYS[1] is a hash: s = the current bucket's start (microseconds, a multiple of the window),
-- c = units admitted in it, p = units admitted in the bucket before, w = the window they were counted
-- under (a limit given per call may change it: counts under another window start afresh).
local start = idiv(now, window) * window
local state = redis.call('HMGET', key, 's', 'c', 'p', 'w')
local stored = tonumber(state[1])
if state[4] and tonumber(state[4]) ~= window then stored = nil end
local current, previous = 0, 0
if stored == start then
  current, previous = tonumber(state[2]), tonumber(state[3])
elseif stored == start - window then
  previous = tonumber(state[2])
end
local elapsed = now - start

-- The estimate of the units in (now - window, now], times the window so that it stays an integer
-- (the limiter checks that limit * window < 2^53): all of the current bucket, and of the previous one
-- the share the window still covers, as if its units had come evenly.
local function scaled(previous_units, current_units, at)
  return previous_units * (window - at) + current_units * window
end

local allowed = scaled(previous, current + cost, elapsed) <= limit * window
if record and (allowed or count_rejected) then
  current = current + cost
  redis.call('HSET', key, 's', text(start), 'c', text(current), 'p', text(previous), 'w', text(window))
  redis.call('PEXPIRE', key, math.ceil(2 * window / 1000))
end

-- Below 0 when counted refusals pushed the estimate past the limit.
local remaining = idiv(limit * window - scaled(previous, current, elapsed), window)
local reset_after = 0
if current > 0 then reset_after = start + 2 * window - now elseif previous > 0 then reset_after = start + window - now end
if allowed then return {1, remaining, 0, reset_after} end

-- Rejected: the first moment the same cost fits. Within this bucket, once the previous bucket's
-- weight has shrunk enough: previous * (window - at) <= room.
local room = (limit - current - cost) * window
if room >= 0 and previous > 0 then
  local at = window - idiv(room, previous)
  if at < window then return {0, remaining, at - elapsed, reset_after} end
end
-- Otherwise in the next bucket, where this one is the previous: current * (window - at) + cost * window
-- <= limit * window.
local at = 0
if current > 0 then at = window - idiv((limit - cost) * window, current) end
if at < 0 then at = 0 elseif at > window then at = window end
return {0, remaining, window - elapsed + at, reset_after}
)lua"sv;
};

/// The approximate sliding window, on Redis.
template <class KeyPolicy = PrefixKey>
using SlidingCounterLimiter = RedisLimiter<SlidingCounter, KeyPolicy>;

}  // namespace swl
