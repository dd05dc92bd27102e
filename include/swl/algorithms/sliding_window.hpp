#pragma once
// SlidingWindowLimiter: an exact sliding window log on one Redis key per limited key.
//
//   auto connection = swl::Connection::tcp("127.0.0.1", 6379);
//   swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
//   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
//
// A request of `cost` is admitted iff the units in (now - window, now] plus `cost` fit in the limit. Each
// request is one entry, whatever its cost (a request of 4,000 tokens costs what a request of one does),
// and a running sum keeps the window's units, so a decision's work and an entry's memory do not grow
// with cost. Each tryAcquire is one EVALSHA of the script below, atomic on the server, so any number of
// processes and threads sharing a Redis agree exactly. Everything around the script is RedisLimiter's,
// including reserve() and settle() for costs known only afterwards (kSettleScript).
//
// The script is the heart of swl: read it with the README's "The script" section beside it. It runs
// after the prelude in redis_limiter.hpp, which reads the arguments.

#include <swl/decision.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis_limiter.hpp>

#include <string_view>

namespace swl {

struct SlidingWindowLog {
  static constexpr std::string_view kName = "swl::SlidingWindowLimiter";
  static constexpr std::string_view kScriptName = "sliding_window";
  static constexpr bool kRecordsMembers = true;
  static void check(const Limit&) {}

  // The busiest path, first: a set of one-unit entries (every set written before 0.2 among them) and a
  // request that records no more than one unit is the log as it always was, counted by its entries alone.
  // It answers before kFunctions below is run: defining a Lua function costs Redis a little on every call.
  static constexpr std::string_view kFastPath = R"lua(
local window_start = text(now - window)
local entries = redis.call('ZCOUNT', key, '(' .. window_start, '+inf')
local sum_score = redis.call('ZSCORE', key, '#')
if not sum_score and (cost <= 1 or (entries + cost > limit and not count_rejected)) then
  local allowed = entries + cost <= limit
  -- A rejected request writes nothing unless the caller opted into the penalty: recording rejections
  -- by default would keep a flooded key full forever, admitting no one.
  if record and (allowed or count_rejected) then
    local member = ARGV[5]
    if member == nil or member == '' then member = text(math.floor(now / 1000)) end
    -- ZADD is the script's first write: a Redis over maxmemory refuses a script's first write that
    -- could grow memory (OOM) before anything changed, but lets every later write through. A member
    -- that was there already (a member policy that repeats itself) is moved, not added: ZADD says so.
    entries = entries + redis.call('ZADD', key, now_text, member)
    redis.call('PEXPIRE', key, ARGV[6] or math.ceil(window / 1000))
  end
  redis.call('ZREMRANGEBYSCORE', key, '(0', window_start)

  local remaining = limit - entries  -- below 0 when counted refusals filled the window past the limit
  -- On Redis's clock an admitted request is the window's newest entry (no score lies ahead of Redis's
  -- own now), which saves a lookup on the busiest path; client clocks disagree, so there it is read.
  if allowed and redis_time and record then return {1, remaining, 0, window} end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local reset_after = 0
  if newest[2] then reset_after = tonumber(newest[2]) + window - now end
  if allowed then return {1, remaining, 0, reset_after} end
  -- The same cost fits once the (entries + cost - limit) oldest entries are gone.
  local needed = entries + cost - limit
  return {0, remaining, tonumber(redis.call('ZRANGE', key, needed - 1, needed - 1, 'WITHSCORES')[2]) + window - now,
          reset_after}
end
)lua";

  // The log's steps for entries of any units, shared by its own script (below) and MultiLimiter's,
  // which keeps one log per rule. Numbers go to redis.call as numbers where they can: Redis formats
  // them with 17 significant digits, exact below 2^53 (unlike Lua's own 14 when concatenating).
  static constexpr std::string_view kFunctions = R"lua(
-- The sliding window log, one entry per request. A key is a sorted set:
--   an admitted request: score = its time in microseconds, member = its unique member, followed by
--     '*units' when it holds more than one unit, or by '=units' once settled (see kSettleScript);
--   '#', once an entry of other than one unit is in the set: minus the units beyond one of every entry
--     in the set (its extra units), as its score: below 0, so it sorts before every time and no trim
--     of times touches it.
-- The window's units are its entries plus their extra units.
local function unitsOf(member)
  return tonumber(string.match(member, '[*=](%d+)$') or 1)
end

-- The window that starts after `window_start` (text), given the entries in it (ZCOUNT) and the score of
-- '#' (nil when the set holds none). Returns the units in it; the extra units of its entries, nil when
-- there is no '#'; the extra units of entries that slid out but are still in the set; and how many such
-- entries there are, -1 when unknown (a set without '#' is not read for them).
local function readWindow(log, window_start, entries, sum_score)
  if not sum_score then return entries, nil, 0, -1 end
  local slid_out = redis.call('ZRANGEBYSCORE', log, '(0', window_start)
  local stale = 0
  for i = 1, #slid_out do stale = stale + unitsOf(slid_out[i]) - 1 end
  local extra = -tonumber(sum_score) - stale
  return entries + extra, extra, stale, #slid_out
end

-- Drops the entries that slid out, and their extra units from '#'. Removing first frees memory, so this
-- gets in even over maxmemory. Returns the set's extra units after, nil when it holds no '#'.
local function trim(log, window_start, extra, stale, gone)
  if gone ~= 0 then redis.call('ZREMRANGEBYSCORE', log, '(0', window_start) end
  if extra == nil or stale == 0 then return extra end
  if extra > 0 then
    redis.call('ZADD', log, -extra, '#')
    return extra
  end
  redis.call('ZREM', log, '#')
  return nil
end

-- Records one entry of `units` scored `score` (text: now, or a lease's end) in a window of `count` units
-- and `extra` extra units (as readWindow returned them), then trims. Its ZADD is the script's first
-- write, so a Redis over maxmemory refuses it before anything changed. Returns the window's units and
-- the set's extra units after.
local function recordEntry(log, member, units, count, extra, stale, gone, ttl, window_start, window, score)
  local new_extra = (extra or 0) + units - 1
  if units ~= 1 then member = member .. '*' .. text(units) end
  local added
  if new_extra == 0 and extra == nil then
    added = redis.call('ZADD', log, score, member)
  else
    added = redis.call('ZADD', log, score, member, -new_extra, '#') - (extra == nil and 1 or 0)
  end
  -- The set must outlive its newest entry's window. A lease's entry lies ahead of now and holds several
  -- units, so '#' is there whenever one is (and the fast path, which sets the TTL from now, is not).
  if new_extra > 0 then
    local newest = tonumber(redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')[2])
    ttl = math.max(tonumber(ttl), math.ceil((newest + window - now) / 1000))
  end
  redis.call('PEXPIRE', log, ttl)
  if gone ~= 0 then redis.call('ZREMRANGEBYSCORE', log, '(0', window_start) end
  if added == 1 then
    if new_extra > 0 then return count + units, new_extra end
    redis.call('ZREM', log, '#')
    return count + units, nil
  end
  -- The member was there already (a member policy that repeats itself, such as millisecond timestamps):
  -- ZADD moved that entry instead of adding one, and the sums counted it twice. Count the window again.
  local live, units_in_window = redis.call('ZRANGEBYSCORE', log, '(0', '+inf'), 0
  for i = 1, #live do units_in_window = units_in_window + unitsOf(live[i]) end
  local live_extra = units_in_window - #live
  if live_extra > 0 then
    redis.call('ZADD', log, -live_extra, '#')
    return units_in_window, live_extra
  end
  redis.call('ZREM', log, '#')
  return units_in_window, nil
end

-- Settles the entry `member` recorded with `recorded` units: it now holds `actual` (0 removes it), and
-- '#' moves by the difference. A settled entry is marked ('=' instead of '*'), so settling it again finds
-- nothing; an entry that has left the window, or a key that expired, is left alone: its units no longer
-- count. `to_now` moves an entry that lies ahead of now (a lease given back) to now: every unit it still
-- holds was used before now, so counting from now covers them. Returns 1 when it settled the entry.
local function settleEntry(log, member, recorded, actual, window, to_now)
  local recorded_member = member
  if recorded ~= 1 then recorded_member = member .. '*' .. text(recorded) end
  local score = redis.call('ZSCORE', log, recorded_member)
  if not score or tonumber(score) <= now - window then return 0 end
  if to_now and tonumber(score) > now then score = now_text end
  local extra = -tonumber(redis.call('ZSCORE', log, '#') or 0) - recorded + math.max(actual, 1)
  local settled = member .. '=' .. text(actual)
  -- A charge grows the set: its ZADD goes first, so Redis over maxmemory refuses it before any change.
  -- A refund removes first, which frees memory, so it gets in even then.
  if actual > recorded then
    redis.call('ZADD', log, score, settled, -extra, '#')
    redis.call('ZREM', log, recorded_member)
  else
    redis.call('ZREM', log, recorded_member)
    if actual > 0 then redis.call('ZADD', log, score, settled) end
    if extra > 0 then redis.call('ZADD', log, -extra, '#') else redis.call('ZREM', log, '#') end
  end
  return 1
end

-- Time until the window holds no entry: its newest entry leaves at its score + window.
local function emptiesIn(log, window)
  local newest = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
  if newest[2] and tonumber(newest[2]) > 0 then return tonumber(newest[2]) + window - now end
  return 0
end

-- Time until `needed` more units have left a trimmed window (every entry in it; '#' sorts first when
-- `extra` is not nil): the oldest entries holding them leave at the last one's score + window.
local function freedIn(log, extra, needed, window)
  local at
  if extra == nil then
    -- One unit per entry: that entry is the needed-th oldest.
    at = redis.call('ZRANGE', log, needed - 1, needed - 1, 'WITHSCORES')[2]
  else
    -- Entries of several units: walk from the oldest, reading more at a time as it goes. Past 4,096
    -- entries it stops: each entry holds at least one unit, so the entry as many places further as
    -- units are still needed frees enough; that wait is long enough, if not the least one.
    local read, freed, chunk = 0, 0, 16
    while at == nil and read < 4096 do
      local batch = redis.call('ZRANGE', log, 1 + read, read + chunk, 'WITHSCORES')
      if #batch == 0 then break end
      for i = 1, #batch, 2 do
        freed = freed + unitsOf(batch[i])
        if freed >= needed then
          at = batch[i + 1]
          break
        end
      end
      read = read + #batch / 2
      chunk = math.min(chunk * 4, 1024)
    end
    if at == nil then
      local rank = math.min(1 + read + needed - freed - 1, redis.call('ZCARD', log) - 1)
      at = redis.call('ZRANGE', log, rank, rank, 'WITHSCORES')[2]
    end
  end
  return tonumber(at) + window - now
end
)lua";

  // Every other request: entries of several units, or a request that records several. The fast path
  // above has read the window's entries and '#'.
  static constexpr std::string_view kScript = R"lua(
local count, extra, stale, gone = readWindow(key, window_start, entries, sum_score)
local allowed = count + cost <= limit

if record and (allowed or count_rejected) then
  local member = ARGV[5]
  if member == nil or member == '' then member = text(math.floor(now / 1000)) end
  count, extra = recordEntry(key, member, cost, count, extra, stale, gone, ARGV[6] or math.ceil(window / 1000),
                             window_start, window, now_text)
else
  extra = trim(key, window_start, extra, stale, gone)
end

local remaining = limit - count
-- Only a set without '#' has no entry ahead of now (a lease's) to outlast this one.
if allowed and redis_time and record and extra == nil then return {1, remaining, 0, window} end
local reset_after = emptiesIn(key, window)
if allowed then return {1, remaining, 0, reset_after} end
return {0, remaining, freedIn(key, extra, count + cost - limit, window), reset_after}
)lua";

  // Settles a reservation (RedisLimiter::settle) or gives a lease back (RedisLimiter::giveBack), after
  // the prelude and kFunctions: ARGV[3] is the units the entry now holds, ARGV[5] its member, ARGV[8]
  // the units it was recorded with, ARGV[9] '1' to move an entry ahead of now to now (a lease).
  // Returns 1 when it settled the entry now, 0 when there was nothing to settle.
  static constexpr std::string_view kSettleScriptName = "settle";
  static constexpr std::string_view kSettleScript = R"lua(
return settleEntry(key, ARGV[5], tonumber(ARGV[8]), cost, window, ARGV[9] == '1')
)lua";

  // A lease (LeasingLimiter), after the prelude and kFunctions: `cost` units for the request in hand and,
  // when they fit, up to ARGV[8] units in all, the rest for the holder to use in its own memory until now
  // + ARGV[9]. They are recorded as one entry scored at that end, so the entry counts from now until the
  // lease's end + window: every window that holds a use of the lease holds the entry too (the README's
  // "Leases" has the proof). A lease takes at most 1/ARGV[10] of the window's room (at least `cost`),
  // so other holders are not starved.
  //   ARGV[8] units wanted in all (cost..limit)   ARGV[9] lease duration (us)   ARGV[10] room divisor
  //   ARGV[11] the holder's previous lease on this key ('' for none), ARGV[12] its units, ARGV[13] the
  //            units it used: given back first, so the room it leaves can be leased again at once
  // Returns {allowed, remaining, retry_after_us, reset_after_us, units recorded (0 when refused)}.
  static constexpr std::string_view kLeaseScriptName = "lease";
  static constexpr std::string_view kLeaseScript = R"lua(
if ARGV[11] ~= '' then settleEntry(key, ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13]), window, true) end
local window_start = text(now - window)
local count, extra, stale, gone = readWindow(key, window_start, redis.call('ZCOUNT', key, '(' .. window_start, '+inf'),
                                             redis.call('ZSCORE', key, '#'))
local room = limit - count
if cost > room then
  extra = trim(key, window_start, extra, stale, gone)
  return {0, room, freedIn(key, extra, cost - room, window), emptiesIn(key, window), 0}
end
local units = math.max(cost, math.min(tonumber(ARGV[8]), math.floor(room / tonumber(ARGV[10]))))
local score = now_text
if units > cost then score = text(now + tonumber(ARGV[9])) end
count, extra = recordEntry(key, ARGV[5], units, count, extra, stale, gone, ARGV[6], window_start, window, score)
return {1, limit - count, 0, emptiesIn(key, window), units}
)lua";
};

template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using SlidingWindowLimiter = RedisLimiter<SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy>;

}  // namespace swl
