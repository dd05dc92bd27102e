#pragma once
/// \file
/// GcraLimiter: the generic cell rate algorithm: a token bucket as one time per key.
///
///   swl::GcraLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// What redis-cell and redis_rate run, and what an API gateway means by "token bucket": a full bucket
/// admits a burst of `limit` at once, then units come back one every window/limit, smoothly rather
/// than all at once when a window ends. O(1) memory per key (one short string). Over any window at most
/// the burst plus what came back in it is admitted, so a window's length can see up to twice the limit
/// around a burst (measured in docs/algorithms.md). Needs limit * window (in microseconds) below 2^53.
///
/// The script runs after the prelude in redis_limiter.hpp, which reads the arguments; everything around
/// it is RedisLimiter's.

#include <swl/decision.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/policies/keys.hpp>
#include <swl/redis_limiter.hpp>

#include <string_view>

namespace swl {

/// The generic cell rate algorithm (the contract in algorithm.hpp): one time per key.
struct Gcra {
  /// The limiter's name, for messages.
  static constexpr std::string_view kName = "swl::GcraLimiter";
  /// The script's name, for messages.
  static constexpr std::string_view kScriptName = "gcra";
  /// No member per request: the key keeps one time.
  static constexpr bool kRecordsMembers = false;
  /// Throws InvalidArgument when limit x window reaches 2^53 microseconds, past what Lua counts exactly.
  static void check(const Limit& limit) { detail::checkScaledExact(limit, kName); }

  /// Its Lua, run after the prelude (algorithm.hpp).
  static constexpr std::string_view kScript = R"lua(
-- KEYS[1] is a string "tat frac limit": the theoretical arrival time, tat + frac/limit microseconds. Each
-- unit admitted moves it window/limit later (the emission interval); a request is admitted while it
-- stays at most one window ahead of now, so a full burst of `limit` fits at once and then units come
-- back evenly. frac keeps the interval exact when the window does not divide by the limit (the
-- limiter checks that limit * window < 2^53).
local tat, frac = now, 0
local stored = redis.call('GET', key)
if stored then
  local t, f, l = string.match(stored, '^(%d+) (%d+) ?(%d*)$')
  t, f = tonumber(t), tonumber(f)
  -- frac counts 1/limit microseconds of the limit it was stored under; under another one (a limit
  -- given per call changed) it is rounded up to a whole microsecond, never down.
  if t and l ~= '' and tonumber(l) ~= limit and f > 0 then t, f = t + 1, 0 end
  if t and (t > now or (t == now and f > 0)) then tat, frac = t, f end
end

local moved = frac + cost * window
local new_tat = tat + idiv(moved, limit)
local new_frac = moved - idiv(moved, limit) * limit
local allowed = new_tat < now + window or (new_tat == now + window and new_frac == 0)
if record and (allowed or count_rejected) then
  tat, frac = new_tat, new_frac
  redis.call('SET', key, text(tat) .. ' ' .. text(frac) .. ' ' .. text(limit), 'PX', math.ceil((tat - now) / 1000) + 1)
end

-- A time with a fraction of a microsecond left, rounded up: waiting less would not be enough.
local function ceiling(at, fraction)
  if fraction > 0 then return at + 1 end
  return at
end
-- Below 0 when counted refusals pushed the arrival time past a window ahead.
local remaining = idiv((now + window - tat) * limit - frac, window)
if remaining > limit then remaining = limit end
local reset_after = ceiling(tat, frac) - now
if reset_after < 0 then reset_after = 0 end
if allowed then return {1, remaining, 0, reset_after} end
-- The same cost fits once its arrival stays within a window of now, counted from the arrival time as it
-- stands now: a counted refusal has just moved it, and a wait measured from before that would end in
-- another refusal, forever.
local next_moved = frac + cost * window
local next_tat = tat + idiv(next_moved, limit)
local next_frac = next_moved - idiv(next_moved, limit) * limit
return {0, remaining, ceiling(next_tat, next_frac) - window - now, reset_after}
)lua"sv;
};

/// A token bucket as one time per key, on Redis.
template <class KeyPolicy = PrefixKey>
using GcraLimiter = RedisLimiter<Gcra, KeyPolicy>;

}  // namespace swl
