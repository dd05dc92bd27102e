#pragma once
// Several sliding window logs decided together, all or nothing, in one atomic Lua script (MultiLimiter).
// The same log as sliding_window_script.hpp, per key; read that one first.

#include <string_view>

namespace swl {

inline constexpr std::string_view kMultiWindowScript = R"lua(
-- KEYS[i]  rule i's sorted set: score = admission time in microseconds, one member per admitted unit
-- ARGV[1]  cost: units this request asks of every rule (1 <= cost <= each limit, checked by the client)
-- ARGV[2]  now in microseconds since the epoch; '' reads Redis's own clock
-- ARGV[3]  this request's unique member; '' uses its millisecond timestamp
-- ARGV[4]  '1' to record rejected requests too (an opt-in penalty)
-- ARGV[2 + 3i], ARGV[3 + 3i], ARGV[4 + 3i]  rule i's window (microseconds), limit and expiry (milliseconds)
-- Returns {allowed 1|0, then for each rule: remaining, retry_after_us, reset_after_us}, integers only.
-- The request is recorded in every log only if every rule admits it: no rule pays for a refusal.

local cost = tonumber(ARGV[1])
local now_text = ARGV[2]
if now_text == '' then
  local time = redis.call('TIME')
  now_text = time[1] .. string.format('%06d', tonumber(time[2]))
end
local now = tonumber(now_text)

local windows, limits, counts, refused = {}, {}, {}, {}
local allowed = true
for i, key in ipairs(KEYS) do
  windows[i] = tonumber(ARGV[2 + 3 * i])
  limits[i] = tonumber(ARGV[3 + 3 * i])
  counts[i] = redis.call('ZCOUNT', key, '(' .. string.format('%.0f', now - windows[i]), '+inf')
  refused[i] = counts[i] + cost > limits[i]
  if refused[i] then allowed = false end
end

if allowed or ARGV[4] == '1' then
  local member = ARGV[3]
  if member == '' then member = string.format('%.0f', math.floor(now / 1000)) end
  local entries = {}
  for unit = 1, cost do
    entries[#entries + 1] = now_text
    entries[#entries + 1] = cost == 1 and member or member .. '#' .. unit
  end
  for i, key in ipairs(KEYS) do
    -- In chunks of 1000 units, so that unpack() stays within Lua's stack limit.
    for first = 1, #entries, 2000 do
      redis.call('ZADD', key, unpack(entries, first, math.min(first + 1999, #entries)))
    end
    redis.call('PEXPIRE', key, ARGV[4 + 3 * i])
    counts[i] = counts[i] + cost
  end
end

-- Slid-out entries go after the ZADDs, so that a ZADD is the first write and Redis over maxmemory
-- refuses the script before it changed anything (see sliding_window_script.hpp).
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.0f', now - windows[i]))
end

local result = {allowed and 1 or 0}
for i, key in ipairs(KEYS) do
  local remaining = limits[i] - counts[i]
  if remaining < 0 then remaining = 0 end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local reset_after = 0
  if newest[2] then reset_after = tonumber(newest[2]) + windows[i] - now end
  -- A rule that refused: the same cost fits once its (count + cost - limit) oldest entries are gone.
  local retry_after = 0
  if refused[i] then
    local blocking = counts[i] + cost - limits[i]
    local entry = redis.call('ZRANGE', key, blocking - 1, blocking - 1, 'WITHSCORES')
    retry_after = tonumber(entry[2]) + windows[i] - now
  end
  result[#result + 1] = remaining
  result[#result + 1] = retry_after
  result[#result + 1] = reset_after
end
return result
)lua";

}  // namespace swl
