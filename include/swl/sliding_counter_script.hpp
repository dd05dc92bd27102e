#pragma once
// The sliding window counter as one atomic Lua script: two fixed buckets per key, the previous one
// weighted by how much of it the sliding window still covers (O(1) memory, approximate). Runs after
// the shared prelude (detail/script_prelude.hpp), which reads the arguments.

#include <string_view>

namespace swl {

inline constexpr std::string_view kSlidingCounterScript = R"lua(
-- KEYS[1] is a hash: s = the current bucket's start (microseconds, a multiple of the window),
-- c = units admitted in it, p = units admitted in the bucket before.
local start = idiv(now, window) * window
local state = redis.call('HMGET', key, 's', 'c', 'p')
local stored = tonumber(state[1])
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
  redis.call('HSET', key, 's', text(start), 'c', text(current), 'p', text(previous))
  redis.call('PEXPIRE', key, math.ceil(2 * window / 1000))
end

local remaining = idiv(limit * window - scaled(previous, current, elapsed), window)
if remaining < 0 then remaining = 0 end
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
)lua";

}  // namespace swl
