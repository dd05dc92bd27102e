#pragma once
// swl's sliding window log before 0.2, kept for the benchmarks as their baseline: one sorted-set member
// per unit of cost, so a request's work and memory grow with its cost. Its one-unit path is the script
// the cost-1 figures of 0.1 were measured with.

#include <swl/redis_limiter.hpp>

#include <string_view>

namespace swl::bench {

struct UnitPerEntryLog {
  static constexpr std::string_view kName = "unit-per-entry log";
  static constexpr std::string_view kScriptName = "unit_per_entry";
  static constexpr bool kRecordsMembers = true;
  static void check(const Limit&) {}
  static constexpr std::string_view kScript = R"lua(
-- The sliding window log. KEYS[1] is a sorted set: score = admission time in microseconds, one member
-- per admitted unit.

-- Entries at or before now - window have slid out; the rest count.
local window_start = text(now - window)
local count = redis.call('ZCOUNT', key, '(' .. window_start, '+inf')
local allowed = count + cost <= limit

-- A rejected request writes nothing unless the caller opted into the penalty: recording rejections
-- by default would keep a flooded key full forever, admitting no one.
if record and (allowed or count_rejected) then
  local member = ARGV[5]
  if member == nil or member == '' then member = text(math.floor(now / 1000)) end
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

local remaining = limit - count  -- below 0 when counted refusals filled the window past the limit

-- The window is empty once its newest entry leaves. On Redis's clock an admitted request is that
-- newest entry (no score lies ahead of Redis's own now), which saves a lookup on the busiest path;
-- client clocks disagree, so there the newest score is read.
if allowed and redis_time and record then return {1, remaining, 0, window} end
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
};

}  // namespace swl::bench
