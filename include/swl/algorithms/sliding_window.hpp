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

  // The log's layout and its numbers, read by every script of the log and by MultiLimiter's.
  static constexpr std::string_view kLayout = R"lua(
-- The sliding window log: one sorted set per limited key, one entry per recorded request.
--   An entry: score = the request's time in microseconds; member = its unique member, followed by
--   '*units' when it holds other than one unit, or by '+units' once settled ('=units' in sets of 0.2).
--   A key's entries are kept in time order: one recorded at or before the newest entry's time (a
--   client's clock behind another's, or stepped back; the end of a lease) is recorded 1 us after it.
--   On Redis's own clock, which moves on between two scripts, that is each request's own time.
-- While every entry holds one unit, the set is "counted by entries": its window's units are its
-- entries (one ZCOUNT), and it holds the mark '!' (score 0) beside them. Once an entry of other units
-- is recorded, it is "counted by units" until it empties: its entries are all marked with their units
-- ('*1' too), and it holds '#' and '#o' instead of '!', with sums that keep every count and search
-- bounded: countedByUnits() below says how.
-- Entries that slid out are removed a few at a time (TRIM): no call's work grows with the window.
local TIMES_END = '(9007199254740992'  -- every entry's time lies below 2^53; sums lie outside
local TRIM = 32                        -- entries that slid out, removed by one call at most
local TRIM_EVERY = 16                  -- a set counted by entries is trimmed on one call in TRIM_EVERY
)lua";

  // The busiest paths, run before kFunctions defines anything (a Lua function costs Redis on every call
  // that defines it): on Redis's clock, one unit that a set counted by entries has room for, and a
  // refusal or peek that records nothing. They take the steps of countedByEntries() below, written out.
  // An admission is recorded before it is known how the set counts: ZADD adds the entry and the mark
  // '!', and answers how many it added. A set counted by entries has its mark (1 or, for a member
  // policy that repeats itself, 0: NX never moves a member already there); a set counted by units has
  // no mark and only marked entries (2), so it takes both back and goes on to kScript to weigh the
  // entry against its sums; a new set (2) has no '#'.
  static constexpr std::string_view kFastPath = R"lua(
local start = text(now - window)
local live = redis.call('ZCOUNT', key, '(' .. start, TIMES_END)
local by_units = nil  -- whether the set is counted by units, once known
if redis_time then
  local answer, marked = nil, false
  if cost == 1 and record and live < limit then
    local member = ARGV[5]
    if member == nil or member == '' then member = text(math.floor(now / 1000)) end
    local added = redis.call('ZADD', key, 'NX', now_text, member, 0, '!')
    by_units = added == 2 and redis.call('ZSCORE', key, '#') ~= false
    if by_units then
      redis.call('ZREM', key, '!', member)
    else
      redis.call('PEXPIRE', key, ARGV[6] or math.ceil(window / 1000))
      answer, marked = {1, limit - live - math.min(added, 1), 0, window}, true
    end
  elseif cost == 0 or (live + cost > limit and not count_rejected) then
    by_units = redis.call('ZSCORE', key, '#') ~= false
    if not by_units then
      local newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2] or 0)
      answer = {1, limit - live, 0, math.max(0, newest + window - now)}
      if cost > 0 then
        -- The same cost fits once the (live + cost - limit)-th oldest entry in the window has left:
        -- the (limit - cost + 1)-th newest.
        local rank = cost - limit - 1
        answer[1], answer[3] = 0, tonumber(redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')[2]) + window - now
      end
    end
  end
  if answer then
    if now % TRIM_EVERY == 0 then
      -- Up to TRIM entries that slid out go, the oldest first (after the mark).
      local slid = redis.call('ZCOUNT', key, '(0', start)
      if slid > TRIM then
        local first = (marked or redis.call('ZSCORE', key, '!')) and 1 or 0
        redis.call('ZREMRANGEBYRANK', key, first, first + TRIM - 1)
      elseif slid > 0 then
        redis.call('ZREMRANGEBYSCORE', key, '(0', start)
      end
    end
    return answer
  end
end
)lua";

  // The log's steps, shared by its scripts below and MultiLimiter's, which keeps one log per rule.
  // Numbers go to redis.call as numbers where they can: Redis formats them with 17 significant digits,
  // exact below 2^53 (unlike Lua's own 14 when concatenating).
  static constexpr std::string_view kFunctions = R"lua(
-- A set counted by entries -------------------------------------------------------------------------
-- Built only off the busiest path (kFastPath): a Lua function costs Redis on every call that defines it.
local function countedByEntries()
  local function memberOf(given)
    if given == nil or given == '' then return text(math.floor(now / 1000)) end
    return given
  end

  -- The time to record an entry at (from `at`, a number), as text and number: 1 us after the newest entry
  -- when that is not earlier. Redis's clock is trusted to have moved on since the last script.
  local function entryTime(key, at)
    if redis_time and at == now then return now_text, now end
    local newest = tonumber(redis.call('ZREVRANGEBYSCORE', key, TIMES_END, '(0', 'WITHSCORES', 'LIMIT', 0, 1)[2] or 0)
    if newest >= at then at = newest + 1 end
    return text(at), at
  end

  -- Records one entry (one unit), and the set's mark when it has none (`marked` false); NX never moves
  -- a member already there (a member policy that repeats itself records nothing the second time).
  -- Returns 1 when the entry was added, 0 for a repeat.
  local function recordEntry(key, at_text, member, marked)
    return redis.call('ZADD', key, 'NX', at_text, member, 0, '!') - (marked and 0 or 1)
  end

  -- Keeps the set until its newest entry, at `at`, has left the window.
  local function expireAfter(key, at, window, ttl)
    redis.call('PEXPIRE', key, math.max(ttl, math.ceil((at + window - now) / 1000)))
  end

  -- Removes up to TRIM entries that slid out, the oldest first (after the mark, when `marked`), on one
  -- call in TRIM_EVERY: they no longer count, so removing them is only for memory, and each removal
  -- costs Redis a command.
  local function trimEntries(key, start, marked)
    if now % TRIM_EVERY ~= 0 then return end
    local slid = redis.call('ZCOUNT', key, '(0', start)
    if slid > TRIM then
      local first = marked and 1 or 0
      redis.call('ZREMRANGEBYRANK', key, first, first + TRIM - 1)
    elseif slid > 0 then
      redis.call('ZREMRANGEBYSCORE', key, '(0', start)
    end
  end

  -- When the window of a set counted by entries, holding `held`, has room for `needed` more: its
  -- `needed` oldest entries must leave, the last of them at its time + window. Counted from the newest,
  -- so that entries that slid out but are still there do not matter.
  local function entriesFreedAfter(key, held, needed, window)
    local rank = needed - held - 1
    return tonumber(redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')[2]) + window - now
  end

  -- When the window of a set counted by entries is empty: its newest entry's time + window.
  local function entriesResetAfter(key, window)
    return math.max(0, tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2] or 0) + window - now)
  end

  return {member = memberOf, time = entryTime, record = recordEntry, expire = expireAfter, trim = trimEntries,
          freedAfter = entriesFreedAfter, resetAfter = entriesResetAfter}
end

-- A set counted by units ---------------------------------------------------------------------------
-- Built only for a set that needs it: a Lua function costs Redis on every call that defines it.
local function countedByUnits()
  -- Beside its entries the set holds, outside the range of times:
  --   '#'    score EXTRA_AT + E, E = the extra units (units - 1) of every entry in the set;
  --   '#o'   score OLDEST_AT + O, O = the number of the set's oldest entry: entries are numbered in
  --          time order, so entry n has the rank n - O + 2, after '#' and '#o';
  --   '#k:j' (k = 1..LEVELS) score NODES_AT + 2 (x + FANOUT^k), x = the extra units of the entries
  --          numbered j FANOUT^k .. (j + 1) FANOUT^k - 1, there only while x is not 0.
  -- So every count and every search over a window reads at most LEVELS + 1 times FANOUT values, and
  -- every write changes LEVELS of them, whatever the window holds and whatever a request costs.
  local EXTRA_AT = -6755399441055744   -- -2^53 + 2^51: '#' sorts first; E within +-2^51
  local OLDEST_AT = -4503599627370496  -- -2^52: '#o' sorts second; O below 2^52
  local NODES_AT = 9007199254740992    -- 2^53: nodes sort after every time; 2^53..2^54 holds even numbers
  local FANOUT, LEVELS = 64, 4

  local function unitsOf(member)
    return tonumber(string.match(member, '[*+=](%d+)$') or 1)
  end

  local function capacity(level) return FANOUT ^ level end
  local function nodeName(level, index) return '#' .. level .. ':' .. text(index) end

  -- Calls Redis with `head` followed by `items`, a few thousand at a time (Lua's unpack has a limit).
  local function callWith(head, items)
    local replies = {}
    for from = 1, #items, 4000 do
      local args = {unpack(head)}
      for i = from, math.min(from + 3999, #items) do args[#args + 1] = items[i] end
      local reply = redis.call(unpack(args))
      if type(reply) == 'table' then for i = 1, #reply do replies[#replies + 1] = reply[i] end end
    end
    return replies
  end

  -- The extra units of the nodes `from`..`to` of `level` (0 for absent ones).
  local function nodeExtras(key, level, from, to)
    local names = {}
    for index = from, to do names[#names + 1] = nodeName(level, index) end
    local scores = callWith({'ZMSCORE', key}, names)
    local extras = {}
    for i = 1, #names do extras[i] = scores[i] and (tonumber(scores[i]) - NODES_AT) / 2 - capacity(level) or 0 end
    return extras
  end

  -- Node changes, in the order they were made: `extra` units more for every node over entry `n`.
  local function addExtra(changes, n, extra)
    for level = 1, LEVELS do
      local name = nodeName(level, idiv(n, capacity(level)))
      if changes[name] == nil then changes[#changes + 1] = name; changes[name] = 0 end
      changes[name] = changes[name] + extra
    end
  end

  -- The ZADD arguments (into `writes`) and the members to remove (into `removals`) that apply `changes`.
  local function nodeWrites(key, changes, writes, removals)
    if #changes == 0 then return end
    local scores = callWith({'ZMSCORE', key}, changes)
    for i, name in ipairs(changes) do
      local size = capacity(tonumber(string.match(name, '^#(%d+)')))
      local extra = (scores[i] and (tonumber(scores[i]) - NODES_AT) / 2 - size or 0) + changes[name]
      if extra ~= 0 then
        writes[#writes + 1] = NODES_AT + 2 * (extra + size)
        writes[#writes + 1] = name
      elseif scores[i] then
        removals[#removals + 1] = name
      end
    end
  end

  -- The lowest level whose nodes over entries first..last are at most FANOUT (LEVELS past 64^5 entries).
  local function topLevel(first, last)
    local level = 0
    while level < LEVELS and idiv(last, capacity(level)) - idiv(first, capacity(level)) >= FANOUT do
      level = level + 1
    end
    return level
  end

  -- The extra units of the entries numbered first..n-1 of a set counted by units.
  local function extraBefore(key, first, n)
    if n <= first then return 0 end
    local level = topLevel(first, n - 1)
    local from, extra = idiv(first, capacity(level)), 0
    for k = level, 1, -1 do
      local at = idiv(n, capacity(k))  -- the node holding entry n
      if at > from then
        for _, x in ipairs(nodeExtras(key, k, from, at - 1)) do extra = extra + x end
      end
      from = math.max(at * FANOUT, idiv(first, capacity(k - 1)))
    end
    if n > from then
      for _, member in ipairs(redis.call('ZRANGE', key, from - first + 2, n - 1 - first + 2)) do
        extra = extra + unitsOf(member) - 1
      end
    end
    return extra
  end

  -- The time of the entry holding the `target`-th unit of a set counted by units, counting from its
  -- oldest entry (numbered `first`; `next` is one past its newest).
  local function timeOfUnit(key, first, next, target)
    local level = topLevel(first, next - 1)
    local from, to, before = idiv(first, capacity(level)), idiv(next - 1, capacity(level)), 0
    for k = level, 1, -1 do
      local size = capacity(k)
      local extras, chosen = nodeExtras(key, k, from, to), to
      for i, extra in ipairs(extras) do
        local index = from + i - 1
        local units = math.min((index + 1) * size, next) - math.max(index * size, first) + extra
        if before + units >= target then
          chosen = index
          break
        end
        before = before + units
      end
      from = math.max(chosen * FANOUT, idiv(first, capacity(k - 1)))
      to = math.min(chosen * FANOUT + FANOUT - 1, idiv(next - 1, capacity(k - 1)))
    end
    local entries = redis.call('ZRANGE', key, from - first + 2, to - first + 2, 'WITHSCORES')
    for i = 1, #entries, 2 do
      before = before + unitsOf(entries[i])
      if before >= target then return tonumber(entries[i + 1]) end
    end
    return error('swl: the log ' .. key .. ' holds fewer units than its sums say')
  end

  -- Entries numbered from 0 by rank, for a set written by swl 0.2 ('#' held minus its extra units, and
  -- no numbers). Once per such set: its work grows with the set, as 0.2's own did.
  local function numberEntries(key)
    local entries, changes, extra = redis.call('ZRANGEBYSCORE', key, '(0', '+inf'), {}, 0
    for n = 0, #entries - 1 do
      local x = unitsOf(entries[n + 1]) - 1
      if x ~= 0 then
        addExtra(changes, n, x)
        extra = extra + x
      end
    end
    local writes = {EXTRA_AT + extra, '#', OLDEST_AT, '#o'}
    nodeWrites(key, changes, writes, {})
    callWith({'ZADD', key}, writes)
  end

  -- One key's log as this call finds it, for a window of `window` microseconds ending now (from `start`,
  -- with `live` entries in it when the caller has read them): its entries that slid out (`slid`, their
  -- members, oldest first, as many as one read brings) and, when counted by units, its extra units and
  -- the number of its oldest entry.
  local function openLog(key, window, start, live)
    start = start or text(now - window)
    local log = {key = key, window = window, start = start, slid = {},
                 live = live or redis.call('ZCOUNT', key, '(' .. start, TIMES_END)}
    local low = redis.call('ZRANGEBYSCORE', key, '-inf', start, 'WITHSCORES', 'LIMIT', 0, TRIM + 3)
    local from = 1
    if low[1] == '#' then
      if low[3] ~= '#o' then
        numberEntries(key)
        return openLog(key, window, start, log.live)
      end
      log.extra, log.oldest, from = tonumber(low[2]) - EXTRA_AT, tonumber(low[4]) - OLDEST_AT, 5
      if low[5] == '!' then
        -- The mark kFastPath leaves when a member policy repeats a member recorded before the set
        -- was counted by units: gone before any rank is read.
        redis.call('ZREM', key, '!')
        return openLog(key, window, start, log.live)
      end
    elseif low[1] == '!' then
      from = 3  -- the mark of a set counted by entries
    end
    for i = from, #low, 2 do log.slid[#log.slid + 1] = low[i] end
    return log
  end

  -- How many entries slid out of the window and are still in the set.
  local function slidCount(log)
    if log.slid_count == nil then
      log.slid_count = #log.slid
      if #log.slid > TRIM then log.slid_count = redis.call('ZCOUNT', log.key, '(0', log.start) end
    end
    return log.slid_count
  end

  -- The units in the window.
  local function unitsIn(log)
    if log.extra == nil then return log.live end
    if log.slid_extra == nil then
      log.slid_extra = 0
      if #log.slid <= TRIM then
        for _, member in ipairs(log.slid) do log.slid_extra = log.slid_extra + unitsOf(member) - 1 end
      else
        log.slid_extra = extraBefore(log.key, log.oldest, log.oldest + slidCount(log))
      end
    end
    return log.live + log.extra - log.slid_extra
  end

  -- The time of the newest entry, 0 when there is none.
  local function newestIn(log)
    if log.newest == nil then
      log.newest = tonumber(redis.call('ZREVRANGEBYSCORE', log.key, TIMES_END, '(0', 'WITHSCORES', 'LIMIT', 0, 1)[2] or 0)
    end
    return log.newest
  end

  -- Records `units` units for `member` (none when member is nil) at time `at`, or 1 us after the newest
  -- entry when that is not earlier, and removes up to TRIM entries that slid out. A set counted by
  -- entries is counted by units from here on. Returns the units the window holds after.
  --
  -- The entry's ZADD is the script's first write: a Redis over maxmemory refuses a script's first write
  -- that could grow memory (OOM) before anything changed, but lets every later write through. With
  -- nothing to record, the removal goes first: it frees memory, so a refusal is still decided then.
  local function commit(log, member, units, at, ttl)
    local key, held = log.key, unitsIn(log)
    if log.extra == nil then log.extra, log.oldest, log.slid_extra, log.marked = 0, 0, 0, true end
    local slid = slidCount(log)
    local entries, trim, changes = slid + log.live, math.min(slid, TRIM), {}
    local extra, trimmed_extra = log.extra, 0
    for i = 1, trim do
      local x = unitsOf(log.slid[i]) - 1
      if x ~= 0 then
        addExtra(changes, log.oldest + i - 1, -x)
        trimmed_extra = trimmed_extra + x
      end
    end
    if member then
      if newestIn(log) >= at then at = log.newest + 1 end
      -- Marked even for one unit: kFastPath's ZADD of an unmarked member then never finds it here.
      -- LT never moves an entry already there (every entry is older than `at`), so a member policy
      -- that repeats itself cannot take an entry out of its place: the repeat gets a suffix instead.
      local name = member .. '*' .. text(units)
      if redis.call('ZADD', key, 'LT', at, name) == 0 then
        name = member .. ')' .. text(log.oldest + entries) .. '*' .. text(units)
        redis.call('ZADD', key, at, name)
      end
      if units ~= 1 then addExtra(changes, log.oldest + entries, units - 1) end
      extra = extra + units - 1
      held = held + units
      entries = entries + 1
      log.newest = math.max(log.newest, at)
    elseif trim > 0 then
      redis.call('ZREMRANGEBYRANK', key, 2, trim + 1)
    end
    local writes, removals = {EXTRA_AT + extra - trimmed_extra, '#', OLDEST_AT + log.oldest + trim, '#o'}, {}
    nodeWrites(key, changes, writes, removals)
    if log.marked then removals[#removals + 1] = '!' end
    if entries - trim == 0 then
      removals[#removals + 1], removals[#removals + 2] = '#', '#o'
    else
      callWith({'ZADD', key}, writes)
    end
    if #removals > 0 then callWith({'ZREM', key}, removals) end
    if member then
      if trim > 0 then redis.call('ZREMRANGEBYRANK', key, 2, trim + 1) end
      redis.call('PEXPIRE', key, math.max(ttl, math.ceil((log.newest + log.window - now) / 1000)))
    end
    log.extra, log.oldest = extra - trimmed_extra, log.oldest + trim
    log.next = log.oldest + entries - trim
    log.slid_left, log.slid_extra = slid - trim, log.slid_extra - trimmed_extra
    return held
  end

  -- The time until the window is empty.
  local function resetAfter(log)
    return math.max(0, newestIn(log) + log.window - now)
  end

  -- The time until `needed` more units have left the window, after commit: its oldest units leave first,
  -- each at its entry's time + window.
  local function freedAfter(log, needed)
    local at
    if log.extra == nil then
      if log.slid_left == nil then log.slid_left = slidCount(log) end
      local rank = log.slid_left + needed - 1
      at = tonumber(redis.call('ZRANGE', log.key, rank, rank, 'WITHSCORES')[2])
    else
      -- Units of entries that slid out but are still in the set come first.
      at = timeOfUnit(log.key, log.oldest, log.next, log.slid_left + log.slid_extra + needed)
    end
    return at + log.window - now
  end

  -- Settles the entry `member` recorded with `recorded` units: it now holds `actual` (0 keeps it as an
  -- entry of no units, so that entries stay numbered), at its own time. A settled entry is marked ('+'
  -- instead of '*'), so settling it again finds nothing; an entry that has left the window, or a key that
  -- expired, is left alone: its units no longer count. Returns 1 when it settled the entry.
  local function settleEntry(key, member, recorded, actual, window)
    -- Recorded as counted by units, or, for one unit, as counted by entries.
    local recorded_member = member .. '*' .. text(recorded)
    local score = redis.call('ZSCORE', key, recorded_member)
    if not score and recorded == 1 then
      recorded_member = member
      score = redis.call('ZSCORE', key, member)
    end
    if not score or tonumber(score) <= now - window then return 0 end
    -- The marks '*' and '+' sort before every byte a member may hold, so the entry keeps its rank.
    local writes, removals = {score, member .. '+' .. text(actual)}, {}
    local book = redis.call('ZRANGE', key, 0, 1, 'WITHSCORES')
    if book[1] == '#' and book[3] ~= '#o' then
      numberEntries(key)
      book = redis.call('ZRANGE', key, 0, 1, 'WITHSCORES')
    end
    if actual ~= recorded or book[1] == '#' then
      local extra, oldest, offset = 0, 0, 0
      if book[1] == '#' then extra, oldest = tonumber(book[2]) - EXTRA_AT, tonumber(book[4]) - OLDEST_AT end
      if book[1] == '#' then offset = 2 elseif book[1] == '!' then offset = 1 end
      local changes = {}
      addExtra(changes, oldest + redis.call('ZRANK', key, recorded_member) - offset, actual - recorded)
      writes[#writes + 1], writes[#writes + 2] = EXTRA_AT + extra + actual - recorded, '#'
      writes[#writes + 1], writes[#writes + 2] = OLDEST_AT + oldest, '#o'
      nodeWrites(key, changes, writes, removals)
      if book[1] == '!' then removals[#removals + 1] = '!' end
    end
    -- A charge grows the set: its ZADD goes first, so Redis over maxmemory refuses it before any change.
    -- A refund removes first, which frees memory, so it gets in even then.
    if actual > recorded then
      callWith({'ZADD', key}, writes)
      redis.call('ZREM', key, recorded_member, unpack(removals))
    else
      redis.call('ZREM', key, recorded_member, unpack(removals))
      callWith({'ZADD', key}, writes)
    end
    return 1
  end

  return {open = openLog, units = unitsIn, commit = commit, freedAfter = freedAfter, resetAfter = resetAfter,
          settle = settleEntry}
end
)lua";

  // Every other decision: count, record when admitted (or when refusals count), slide, answer. After
  // kFastPath, which has read `start` and `live`.
  static constexpr std::string_view kScript = R"lua(
local ttl = tonumber(ARGV[6]) or math.ceil(window / 1000)
-- The set's lowest member: '#' counted by units, '!' counted by entries, else one without its mark.
local lowest = by_units and '#' or redis.call('ZRANGE', key, 0, 0)[1]
local allowed = live + cost <= limit
-- A rejected request writes nothing unless the caller opted into the penalty: recording rejections
-- by default would keep a flooded key full forever, admitting no one.
local recorded = record and (allowed or count_rejected)
if lowest ~= '#' and (cost <= 1 or not recorded) then
  -- Counted by entries, and staying so: what it records holds one unit.
  local entries = countedByEntries()
  local held = live
  if recorded then
    local at_text, at = entries.time(key, now)
    held = held + entries.record(key, at_text, entries.member(ARGV[5]), lowest == '!')
    entries.expire(key, at, window, ttl)
  end
  entries.trim(key, start, recorded or lowest == '!')
  local retry_after = 0
  if not allowed then retry_after = entries.freedAfter(key, held, held + cost - limit, window) end
  -- remaining is below 0 when counted refusals filled the window past the limit
  return {allowed and 1 or 0, limit - held, retry_after, entries.resetAfter(key, window)}
end

local units = countedByUnits()
local log = units.open(key, window, start, live)
allowed = units.units(log) + cost <= limit
local member = nil
if record and (allowed or count_rejected) then member = countedByEntries().member(ARGV[5]) end
local held = units.commit(log, member, cost, now, ttl)
local retry_after = 0
if not allowed then retry_after = units.freedAfter(log, held + cost - limit) end
return {allowed and 1 or 0, limit - held, retry_after, units.resetAfter(log)}
)lua";

  // Settles a reservation (RedisLimiter::settle) or gives a lease back (RedisLimiter::giveBack), after
  // the prelude and kFunctions: ARGV[3] is the units the entry now holds, ARGV[5] its member, ARGV[8]
  // the units it was recorded with. Returns 1 when it settled the entry now, 0 when there was nothing
  // to settle.
  static constexpr std::string_view kSettleScriptName = "settle";
  static constexpr std::string_view kSettleScript = R"lua(
return countedByUnits().settle(key, ARGV[5], tonumber(ARGV[8]), cost, window)
)lua";

  // A lease (LeasingLimiter), after the prelude and kFunctions: `cost` units for the request in hand and,
  // when they fit, up to ARGV[8] units in all, the rest for the holder to use in its own memory until now
  // + ARGV[9]. They are recorded as one entry at that end (or after the newest entry), so the entry
  // counts from now until the lease's end + window: every window that holds a use of the lease holds the
  // entry too (the README's "Leases" has the proof). A lease takes at most 1/ARGV[10] of the window's
  // room (at least `cost`), so other holders are not starved.
  //   ARGV[8] units wanted in all (cost..limit)   ARGV[9] lease duration (us)   ARGV[10] room divisor
  //   ARGV[11] the holder's previous lease on this key ('' for none), ARGV[12] its units, ARGV[13] the
  //            units it used: given back first, so the room it leaves can be leased again at once
  // Returns {allowed, remaining, retry_after_us, reset_after_us, units recorded (0 when refused)}.
  static constexpr std::string_view kLeaseScriptName = "lease";
  static constexpr std::string_view kLeaseScript = R"lua(
local units = countedByUnits()
if ARGV[11] ~= '' then units.settle(key, ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13]), window) end
local log = units.open(key, window)
local room = limit - units.units(log)
local ttl = tonumber(ARGV[6])
if cost > room then
  local held = units.commit(log, nil, 0, now, ttl)
  return {0, limit - held, units.freedAfter(log, held + cost - limit), units.resetAfter(log), 0}
end
local leased = math.max(cost, math.min(tonumber(ARGV[8]), math.floor(room / tonumber(ARGV[10]))))
local at = now
if leased > cost then at = now + tonumber(ARGV[9]) end
local held = units.commit(log, ARGV[5], leased, at, ttl)
return {1, limit - held, 0, units.resetAfter(log), leased}
)lua";
};

template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using SlidingWindowLimiter = RedisLimiter<SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy>;

}  // namespace swl
