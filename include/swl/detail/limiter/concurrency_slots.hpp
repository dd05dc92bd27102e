#pragma once
// ConcurrencyLimiter's Lua: slots in a sorted set that free themselves when their holder vanishes.

#include <swl/algorithm.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/script/calls.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/redis/client.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace swl::detail {

// The Lua of the slots; each part runs after the prelude and kFunctions.
struct ConcurrencySlots {
  static constexpr std::string_view kFunctions = R"lua(
-- Concurrency slots. A key is a sorted set: member = one holder's slot id, score = when that slot
-- expires, in microseconds, unless it is extended or released first. A slot whose expiry has come is
-- no longer held, whether or not it has been removed yet: its holder crashed, hung or forgot it.
local slot = ARGV[5]

-- Time until the latest slot expires; 0 when none is held. Its score is a ZSET's last: O(log n).
local function untilLatest(slots)
  local latest = redis.call('ZRANGE', slots, -1, -1, 'WITHSCORES')[2]
  if not latest then return 0 end
  return tonumber(latest) - now
end

-- The key outlives its latest slot and no more, so Redis drops the key of holders that all vanished.
local function outliveLatest(slots)
  local left = untilLatest(slots)
  if left > 0 then redis.call('PEXPIRE', slots, math.ceil(left / 1000)) end
  return left
end
)lua"sv;

  // Takes a slot (cost 1) or counts the held ones (cost 0). ARGV[8] is the longest retry_after to answer.
  // Returns {allowed, remaining, retry_after_us, reset_after_us}; reset_after is the time until the
  // latest slot expires.
  static constexpr std::string_view kAcquireScript = R"lua(
-- Expired slots go first, so they are never counted; each is removed once, so a call's work is
-- O(log n + slots removed), whatever callers do.
redis.call('ZREMRANGEBYSCORE', key, '-inf', now_text)
local held = redis.call('ZCARD', key)
local allowed = held + cost <= limit
local reset_after
if record and allowed then
  -- A slot id already held (a member policy that repeats itself) is moved, not added: ZADD says so.
  held = held + redis.call('ZADD', key, text(now + window), slot)
  reset_after = outliveLatest(key)
else
  reset_after = untilLatest(key)
end
if allowed then return {1, limit - held, 0, reset_after} end
-- Refused: a slot is free at the latest when the earliest one expires, but holders usually release long
-- before that, so the caller is asked back after ARGV[8] at most. Every slot left lies ahead of now, so
-- the wait is never 0.
local earliest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
return {0, limit - held, math.min(earliest - now, tonumber(ARGV[8])), reset_after}
)lua"sv;

  // Frees the slot ARGV[5]. Returns 1 when it was still held; 0 when it had expired, been released
  // already, or the key was reset.
  static constexpr std::string_view kReleaseScript = R"lua(
local expiry = redis.call('ZSCORE', key, slot)
if not expiry then return 0 end
redis.call('ZREM', key, slot)
if tonumber(expiry) <= now then return 0 end
return 1
)lua"sv;

  // The slot ARGV[5], if still held, now expires ARGV[8] microseconds from now. Returns 1 when extended.
  static constexpr std::string_view kExtendScript = R"lua(
local expiry = redis.call('ZSCORE', key, slot)
if not expiry then return 0 end
-- An expired slot is lost for good, trimmed or not: its holder must learn it, and stop.
if tonumber(expiry) <= now then
  redis.call('ZREM', key, slot)
  return 0
end
redis.call('ZADD', key, 'XX', text(now + tonumber(ARGV[8])), slot)
outliveLatest(key)
return 1
)lua"sv;
};

// The three Scripts, each beside the text it views.
struct SlotScripts {
  std::string acquire_text = scriptText<ConcurrencySlots>(ConcurrencySlots::kAcquireScript);
  std::string release_text = scriptText<ConcurrencySlots>(ConcurrencySlots::kReleaseScript);
  std::string extend_text = scriptText<ConcurrencySlots>(ConcurrencySlots::kExtendScript);
  Script acquire{"concurrency_acquire", acquire_text};
  Script release{"concurrency_release", release_text};
  Script extend{"concurrency_extend", extend_text};
};

inline const SlotScripts& slotScripts() {
  static const SlotScripts scripts;
  return scripts;
}

}  // namespace swl::detail
