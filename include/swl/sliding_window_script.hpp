#pragma once
// The sliding window log, as one atomic Lua script: the heart of swl. Read it with the README's
// "The script" section beside it.

#include <string_view>

namespace swl {

inline constexpr std::string_view kSlidingWindowScript = R"lua(
-- swl sliding window log: one atomic decision for one key.
-- KEYS[1]  the key's sorted set: score = admission time in microseconds, one member per admitted unit
-- ARGV[1]  window in microseconds
-- ARGV[2]  limit: the most units the window holds
-- ARGV[3]  cost: units this request asks for (1 <= cost <= limit, checked by the client); default 1;
--          0 peeks: the window is read (and trimmed) but nothing is recorded
-- ARGV[4]  now in microseconds since the epoch; '' or absent: read Redis's own clock
-- ARGV[5]  this request's unique member; '' or absent: its millisecond timestamp (the seed articles' scheme)
-- ARGV[6]  expiry in milliseconds, set on every write: at least the window; absent: the window
-- ARGV[7]  '1' to record rejected requests too (an opt-in penalty); otherwise the window is left untouched
-- Returns {allowed 1|0, remaining, retry_after_us, reset_after_us}, integers only: Redis truncates a
-- Lua number on its way to the client, so durations travel as whole microseconds.
-- The first three arguments alone make a call, so other tools (redis-benchmark, ../shared/bench) can
-- run this same script.

local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local cost = tonumber(ARGV[3] or 1)

-- Times sent back to Redis are built from integer parts: Lua formats a concatenated number with 14
-- significant digits and would cut the last digits off a 16-digit microsecond time.
local now_text = ARGV[4]
local redis_time = now_text == nil or now_text == ''
if redis_time then
  local time = redis.call('TIME')
  now_text = time[1] .. string.format('%06d', tonumber(time[2]))
end
local now = tonumber(now_text)  -- below 2^53, so exact in a Lua double

-- Entries at or before now - window have slid out; the rest count.
local window_start = string.format('%.0f', now - window)
local count = redis.call('ZCOUNT', key, '(' .. window_start, '+inf')
local allowed = count + cost <= limit

-- A rejected request writes nothing unless the caller opted into the penalty: recording rejections
-- by default would keep a flooded key full forever, admitting no one.
if cost > 0 and (allowed or ARGV[7] == '1') then
  local member = ARGV[5]
  if member == nil or member == '' then member = string.format('%.0f', math.floor(now / 1000)) end
  if cost == 1 then
    redis.call('ZADD', key, now_text, member)
  else
    -- One member per unit, in one ZADD up to 1000 units; larger costs go in chunks of 1000 so that
    -- unpack() stays within Lua's stack limit.
    local batch = {}
    for unit = 1, cost do
      batch[#batch + 1] = now_text
      batch[#batch + 1] = member .. '#' .. unit
      if #batch == 2000 or unit == cost then
        redis.call('ZADD', key, unpack(batch))
        batch = {}
      end
    end
  end
  count = count + cost
  redis.call('PEXPIRE', key, ARGV[6] or math.ceil(window / 1000))
end

-- The slid-out entries go only now, so that ZADD is the script's first write: a Redis over maxmemory
-- refuses a script's first write that could grow memory (OOM) before anything changed, but lets every
-- later write of a script that has written through. Trimming first would have let the ZADD in.
redis.call('ZREMRANGEBYSCORE', key, '-inf', window_start)

local remaining = limit - count
if remaining < 0 then remaining = 0 end

-- The window is empty once its newest entry leaves. On Redis's clock an admitted request is that
-- newest entry (no score lies ahead of Redis's own now), which saves a lookup on the busiest path;
-- client clocks disagree, so there the newest score is read.
if allowed and redis_time and cost > 0 then return {1, remaining, 0, window} end
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local reset_after = 0
if newest[2] then reset_after = tonumber(newest[2]) + window - now end
if allowed then return {1, remaining, 0, reset_after} end

-- The same cost fits once the (count + cost - limit) oldest entries are gone; the last of them
-- leaves the window at its score + window.
local blocking = count + cost - limit
local entry = redis.call('ZRANGE', key, blocking - 1, blocking - 1, 'WITHSCORES')
return {0, remaining, tonumber(entry[2]) + window - now, reset_after}
)lua";

}  // namespace swl
