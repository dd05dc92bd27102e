#pragma once
/// \file
/// SlidingWindowLimiter: an exact sliding window log on one Redis key per limited key.
///
///   auto connection = swl::Connection::tcp("127.0.0.1", 6379);
///   swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// A request of `cost` is admitted iff the units in (now - window, now] plus `cost` fit in the limit. Each
/// request is one entry, whatever its cost (a request of 4,000 tokens costs what a request of one does),
/// and sums of the entries' units keep every count and every retry_after exact in a bounded number of
/// steps: no call's work grows with the window or with a request's cost. Each tryAcquire is one EVALSHA
/// of the script below, atomic on the server, so any number of processes and threads sharing a Redis
/// agree exactly. Everything around the script is RedisLimiter's, but what only a log can do: reserve()
/// and settle() for costs known only afterwards, and the leases LeasingLimiter is built on (the end of
/// this header, beside their Lua).
///
/// The script is the heart of swl: read it with docs/scripts.md beside it (or whole:
/// examples/swl_scripts sliding_window). It runs after the prelude in algorithm.hpp, which reads the
/// arguments.

#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/reporting.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis_limiter.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace swl {

/// The exact sliding window log (the contract in algorithm.hpp): one sorted-set entry per request.
struct SlidingWindowLog {
  /// The limiter's name, for messages.
  static constexpr std::string_view kName = "swl::SlidingWindowLimiter";
  /// The script's name, for messages.
  static constexpr std::string_view kScriptName = "sliding_window";
  /// A member per request: the log records each admission.
  static constexpr bool kRecordsMembers = true;
  /// Any limit: the log keeps every limit exactly.
  static void check(const Limit&) {}

  /// The log's layout and its numbers, read by every script of the log and by MultiLimiter's.
  static constexpr std::string_view kLayout = R"lua(
-- The sliding window log: one sorted set per limited key, one entry per recorded request.
--   An entry: score = the request's time in microseconds; member = its unique member, as the member
--   policy made it while the set holds one-unit entries only, and in a set counted by units '*' and
--   its units (a big-endian double: read in one call, as names are read by the thousand), then the
--   member; '+' instead of '*' once settled. (Sets of 0.2 wrote 'member*units' and 'member=units'.)
--   A key's entries are kept in time order: one recorded at or before the newest entry's time (a
--   client's clock behind another's, or stepped back; the end of a lease) is recorded 1 us after it.
--   On Redis's own clock, which moves on between two scripts, that is each request's own time.
-- While every entry holds one unit, the set is "counted by entries": its window's units are its
-- entries (one ZCOUNT), and it holds the mark '!' (score 0) beside them. Once an entry of other units
-- is recorded, it is "counted by units" until it empties: its new entries all carry their units (one
-- too), and it holds its bookkeeping ('#...') instead of '!', with sums that keep every count and search
-- bounded: countedByUnits() below says how.
-- Entries that slid out are removed a few at a time: no call's work grows with the window.
local TIMES_END = '(9007199254740992'  -- every entry's time lies below 2^53; sums lie outside
local TRIM, TRIM_EVERY = 16, 8         -- counted by entries: at most TRIM, on one call in TRIM_EVERY
local UNITS_TRIM = 8                   -- counted by units: at most UNITS_TRIM, on every call
local LOW = UNITS_TRIM + 3             -- members read at or below a window's start: marks, then entries
)lua";

  /// The busiest paths, run before kFunctions defines anything (a Lua function costs Redis on every call
  /// that defines it): on Redis's clock, one unit that a set counted by entries has room for, and a
  /// refusal or peek that records nothing. They take the steps of countedByEntries() below, written out.
  /// An admission is recorded before it is known how the set counts: ZADD adds the entry and the mark
  /// '!', and answers how many it added. A set counted by entries has its mark (1 or, for a member
  /// policy that repeats itself, 0: NX never moves a member already there); a set counted by units has
  /// no mark and only marked entries (2), so it takes both back and goes on to kScript to weigh the
  /// entry against its sums; a new set (2) has no '#'.
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
    by_units = added == 2 and redis.call('ZCOUNT', key, '-inf', '(0') > 0
    if by_units then
      redis.call('ZREM', key, '!', member)
    else
      redis.call('PEXPIRE', key, ARGV[6] or math.ceil(window / 1000))
      answer, marked = {1, limit - live - math.min(added, 1), 0, window}, true
    end
  elseif cost == 0 or (live + cost > limit and not count_rejected) then
    by_units = redis.call('ZCOUNT', key, '-inf', '(0') > 0
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

  /// The log's steps, shared by its scripts below and MultiLimiter's, which keeps one log per rule.
  /// Numbers go to redis.call as numbers where they can: Redis formats them with 17 significant digits,
  /// exact below 2^53 (unlike Lua's own 14 when concatenating).
  static constexpr std::string_view kFunctions = R"lua(
-- The set's first LOW members at or below the window's start (`start`, as text): its bookkeeping
-- ('#...') when counted by units or its mark '!' when counted by entries, then entries that slid out.
-- A window that holds nothing (`live` 0) while LOW members lie there goes at once, so a key hit again
-- after a quiet window starts afresh instead of trimming a few entries per call for as long as they
-- last: UNLINK frees a large set in Redis's background thread, so this call's work does not grow with
-- what slid out.
local function lowMembers(key, start, live)
  local low = redis.call('ZRANGEBYSCORE', key, '-inf', start, 'LIMIT', 0, LOW)
  if live > 0 or #low < LOW then return low end
  redis.call('UNLINK', key)
  return {}
end

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
  -- costs Redis a command. `slid` is how many slid out, when the caller has read them.
  local function trimEntries(key, start, marked, slid)
    if now % TRIM_EVERY ~= 0 then return end
    if slid == nil or slid > TRIM then slid = redis.call('ZCOUNT', key, '(0', start) end
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
  -- Entries are numbered in time order, from the oldest in the set (O) to the newest (next - 1): entry
  -- n has the rank n - O + 1. Beside them the set holds, outside the range of times:
  --   one bookkeeping member, scored -1 - G, G the number of its writes (so that each successor sorts
  --     below the member it replaces, which then goes by rank with the entries that slid out): '#' and
  --     fourteen big-endian doubles, E, O, newest, T, G, q1..q4, p1..p4, N, where
  --     E is the extra units (units - 1) of the entries in the set, newest the newest entry's time, T the
  --     number from which nodes are kept, qk the extra units of the newest entry's node of level k,
  --     pk those of the entries of the oldest node of level k that have already left the set, and N the
  --     number of the next entry, so that how many slid out is known without counting them (0.3 wrote no
  --     N: its sets count them once, until their next write);
  --   nodes of levels k = 1..4, each over SIZE[k] consecutive numbers from T on, kept once an entry past
  --     them is recorded (the newest node of a level lives in qk): '#' and two big-endian doubles, x and
  --     j, score BAND[k] + 2 j, x = the extra units of entries j SIZE[k] .. (j + 1) SIZE[k] - 1 as
  --     recorded and settled, those that left the set included (pk says how many of the oldest node's
  --     left). A node's value is in its name, so that a run of nodes is one read of names: Redis formats
  --     every score it returns, and Lua's tonumber costs more than struct.unpack.
  -- So a count or a search over any window reads at most four runs of FANOUT members, and a write
  -- changes the entry, the bookkeeping member and, once per SIZE[1] entries, a node: nothing grows with
  -- the window or with a request's cost.
  local FANOUT, LEVELS = 16, 4
  local SIZE = {16, 256, 4096, 65536}
  -- 2^53 and 2^50 beyond it, again and again: scores in 2^53..2^54 are even numbers
  local BAND = {9007199254740992, 10133099161583616, 11258999068426240, 12384898975268864}
  -- Entry numbers stay below 2^52, and sizes are powers of two: their quotients are exact.
  local fl = math.floor
  local function unitsOf(member)
    local mark = string.byte(member)
    if mark == 42 or mark == 43 then return (struct.unpack('>d', member, 2)) end  -- '*' or '+'
    local at = string.find(member, '[*=]%d+$')  -- 0.2's 'member*units', 'member=units'
    return at and tonumber(string.sub(member, at + 1)) or 1
  end

  local function nodeName(value, index) return '#' .. struct.pack('>dd', value, index) end

  local function readBook(log, name)
    local with_next = #name > 105  -- 0.3's had 13 doubles; struct.unpack then returns a position last
    local e, o, newest, kept, writes, q1, q2, q3, q4, p1, p2, p3, p4, next =
      struct.unpack(with_next and '>dddddddddddddd' or '>ddddddddddddd', name, 2)
    log.book, log.extra, log.oldest, log.newest, log.kept, log.writes = name, e, o, newest, kept, writes
    log.q, log.p = {q1, q2, q3, q4}, {p1, p2, p3, p4}
    if with_next then log.next = next end
  end

  local function bookName(log)
    local q, p = log.q, log.p
    return '#' .. struct.pack('>dddddddddddddd', log.extra, log.oldest, log.newest, log.kept, log.writes, q[1], q[2],
                              q[3], q[4], p[1], p[2], p[3], p[4], log.next)
  end

  -- Adds up the units of the present entries of the nodes `from`..`to` of `level`, oldest first, to
  -- `before`, stopping at the first node that brings the sum to `target`: returns that node's index (or
  -- to) and the sum before it (or the whole sum). Nodes from T on are kept one after another, so one
  -- read of names brings them; the newest is in the bookkeeping; before T only settled entries made
  -- nodes, read with their numbers. (One loop, no callback: a Lua call per node would cost more than
  -- the read.)
  local function scanNodes(log, level, from, to, target, before)
    local size, oldest, next, band = SIZE[level], log.oldest, log.next, BAND[level]
    local first_kept, newest, oldest_node = fl(log.kept / size), fl((next - 1) / size), fl(oldest / size)
    local a, b = math.max(from, first_kept), math.min(to, newest - 1)
    local kept, sparse = {}, {}
    if b >= a then kept = redis.call('ZRANGEBYSCORE', log.key, band + 2 * a, band + 2 * b) end
    if from < first_kept then
      for _, name in ipairs(redis.call('ZRANGEBYSCORE', log.key, band + 2 * from, band + 2 * math.min(to, first_kept - 1))) do
        local value, index = struct.unpack('>dd', name, 2)
        sparse[index] = value
      end
    end
    local unpack, offset = struct.unpack, 1 - a
    for index = from, to do
      local units
      if index >= first_kept and index < newest then
        units = size + unpack('>d', kept[index + offset], 2)
      elseif index == newest then
        units = log.q[level] + next - index * size
      else
        units = size + (sparse[index] or 0)
      end
      if index == oldest_node then units = units - (oldest - index * size) - log.p[level] end
      if before + units >= target then return index, before end
      before = before + units
    end
    return to, before
  end

  -- The lowest level whose nodes over the set's entries number at most FANOUT (4 past 16^5 entries),
  -- and the range of its nodes.
  local function topLevel(log)
    local level, first, last = 0, log.oldest, log.next - 1
    while level < LEVELS and fl(last / (SIZE[level + 1] / FANOUT)) - fl(first / (SIZE[level + 1] / FANOUT)) >= FANOUT do
      level = level + 1
    end
    if level == 0 then return 0, first, last end
    return level, fl(first / SIZE[level]), fl(last / SIZE[level])
  end

  -- The units of the present entries numbered below `n`.
  local function unitsBefore(log, n)
    local level, from = topLevel(log)
    local units = 0
    for k = level, 1, -1 do
      local at = fl(n / SIZE[k])  -- the node holding entry n
      if at > from then
        local _, sum = scanNodes(log, k, from, at - 1, math.huge, units)
        units = sum
      end
      from = math.max(at * FANOUT, fl(log.oldest / (k > 1 and SIZE[k - 1] or 1)))
    end
    if n > from then
      for _, member in ipairs(redis.call('ZRANGE', log.key, from - log.oldest + 1, n - log.oldest)) do
        units = units + unitsOf(member)
      end
    end
    return units
  end

  -- The first of `members` whose units, added in turn to `before`, bring the sum to `target` (nil when
  -- none does).
  local function memberReaching(members, target, before)
    local byte, unpack = string.byte, struct.unpack
    for _, member in ipairs(members) do
      local mark = byte(member)
      if mark == 42 or mark == 43 then before = before + unpack('>d', member, 2) else before = before + unitsOf(member) end
      if before >= target then return member end
    end
    return nil
  end

  -- The entry holding the `target`-th unit of the set, counted from its oldest entry: a descent through
  -- the sums, then one read of at most FANOUT entries.
  local function entryOfUnit(log, target)
    local level, from, to = topLevel(log)
    local before = 0
    for k = level, 1, -1 do
      local chosen
      chosen, before = scanNodes(log, k, from, to, target, before)
      local below = k > 1 and SIZE[k - 1] or 1
      from = math.max(chosen * FANOUT, fl(log.oldest / below))
      to = math.min(chosen * FANOUT + FANOUT - 1, fl((log.next - 1) / below))
    end
    local entries = redis.call('ZRANGE', log.key, from - log.oldest + 1, to - log.oldest + 1)
    return memberReaching(entries, target, before) or error('swl: the log ' .. log.key .. ' holds fewer units than its sums say')
  end

  -- Numbers the entries of a set written by swl 0.2 ('#' held minus its extra units, and no numbers), and
  -- keeps its nodes. Once per such set: its work grows with the set, as 0.2's own did.
  local function numberEntries(key)
    local entries = redis.call('ZRANGEBYSCORE', key, '(0', '+inf', 'WITHSCORES')
    local log = {extra = 0, oldest = 0, kept = 0, newest = 0, writes = 0, q = {0, 0, 0, 0}, p = {0, 0, 0, 0}}
    local writes = {}
    for i = 1, #entries, 2 do
      local n, x = (i - 1) / 2, unitsOf(entries[i]) - 1
      for k = 1, LEVELS do
        if n > 0 and fl(n / SIZE[k]) ~= fl((n - 1) / SIZE[k]) then
          writes[#writes + 1], writes[#writes + 2] = BAND[k] + 2 * fl((n - 1) / SIZE[k]), nodeName(log.q[k], fl((n - 1) / SIZE[k]))
          log.q[k] = 0
        end
        log.q[k] = log.q[k] + x
      end
      log.extra, log.newest = log.extra + x, tonumber(entries[i + 1])
    end
    log.next = #entries / 2
    writes[#writes + 1], writes[#writes + 2] = -1, bookName(log)
    redis.call('ZREM', key, '#')
    for from = 1, #writes, 4000 do
      redis.call('ZADD', key, unpack(writes, from, math.min(from + 3999, #writes)))
    end
  end

  -- One key's log as this call finds it, for a window of `window` microseconds ending now. The caller may
  -- bring what it has read: `start` (the window's start as text), `live` (its entries), and `low`, the
  -- set's first LOW members at or below `start`. The log holds the members of the entries that slid out
  -- but are still in the set (`slid`, oldest first, as many as that read brings) and, when the set is
  -- counted by units, its bookkeeping.
  local function openLog(key, window, start, live, low)
    start = start or text(now - window)
    live = live or redis.call('ZCOUNT', key, '(' .. start, TIMES_END)
    low = low or lowMembers(key, start, live)
    local log = {key = key, window = window, start = start, slid = {}, live = live}
    if low[1] == '#' then
      numberEntries(key)
      return openLog(key, window, start, log.live)
    end
    local from = 1
    if low[1] ~= nil and string.byte(low[1]) == 35 then  -- '#...': its bookkeeping member
      readBook(log, low[1])
      from = 2
    end
    if low[from] == '!' then
      -- A set counted by units shows the mark kFastPath leaves when a member policy repeats a member
      -- recorded before the set was counted by units: it goes before any rank is read.
      if log.book then redis.call('ZREM', key, '!') end
      from = from + 1
    end
    for i = from, math.min(#low, from + UNITS_TRIM) do log.slid[#log.slid + 1] = low[i] end
    return log
  end

  -- How many entries slid out of the window and are still in the set.
  local function slidCount(log)
    if log.slid_count == nil then
      log.slid_count = #log.slid
      if #log.slid > UNITS_TRIM then
        log.slid_count = log.next and log.next - log.oldest - log.live or redis.call('ZCOUNT', log.key, '(0', log.start)
      end
    end
    return log.slid_count
  end

  -- The units in the window.
  local function unitsIn(log)
    if log.extra == nil then return log.live end
    if log.slid_extra == nil then
      log.next = log.oldest + slidCount(log) + log.live
      log.slid_extra = 0
      if #log.slid <= UNITS_TRIM then
        for _, member in ipairs(log.slid) do log.slid_extra = log.slid_extra + unitsOf(member) - 1 end
      elseif log.live == 0 then
        log.slid_extra = log.extra  -- everything slid out
      else
        log.slid_extra = unitsBefore(log, log.oldest + slidCount(log)) - slidCount(log)
      end
    end
    return log.live + log.extra - log.slid_extra
  end

  -- Records `units` units for `member` at time `at`, or 1 us after the newest entry when that is not
  -- earlier, and removes up to UNITS_TRIM entries that slid out. A set counted by entries is counted by
  -- units from here on. With no member (a refusal, a peek) it writes nothing: the entries that slid out
  -- go with the next entry recorded, or all at once when the window is empty (lowMembers), so no
  -- refusal pays for a removal. Returns the units the window holds after.
  --
  -- The entry's ZADD is the script's first write: a Redis over maxmemory refuses a script's first write
  -- that could grow memory (OOM) before anything changed, but lets every later write through.
  local function commit(log, member, units, at, ttl)
    local key, held = log.key, unitsIn(log)
    local counted_by_entries = log.extra == nil
    if counted_by_entries then
      if not member then return held end  -- nothing to count by units yet
      -- Its entries are numbered so that the last is just below a multiple of SIZE[LEVELS], from which
      -- nodes are kept: they all hold one unit, so no node is needed before it.
      local entries = slidCount(log) + log.live
      log.kept = SIZE[LEVELS] * math.ceil(entries / SIZE[LEVELS])
      log.extra, log.oldest, log.next, log.slid_extra = 0, log.kept - entries, log.kept, 0
      log.q, log.p, log.writes = {0, 0, 0, 0}, {0, 0, 0, 0}, 0
      log.newest = tonumber(redis.call('ZREVRANGEBYSCORE', key, TIMES_END, '(0', 'WITHSCORES', 'LIMIT', 0, 1)[2] or 0)
    end
    local slid = slidCount(log)
    if not member then
      log.slid_left = slid
      return held
    end
    local trim = math.min(slid, UNITS_TRIM)
    local oldest, trimmed_extra, writes, gone = log.oldest + trim, 0, {}, {}
    for i = 1, trim do trimmed_extra = trimmed_extra + unitsOf(log.slid[i]) - 1 end
    -- What leaves: its extra units leave E, each oldest node counts its part that left, and nodes left
    -- wholly behind go.
    for k = 1, LEVELS do
      local was, is = fl(log.oldest / SIZE[k]), fl(oldest / SIZE[k])
      if is > was then
        gone[#gone + 1] = {BAND[k] + 2 * was, BAND[k] + 2 * (is - 1)}
        log.p[k] = 0
        for i = is * SIZE[k] - log.oldest + 1, trim do log.p[k] = log.p[k] + unitsOf(log.slid[i]) - 1 end
      else
        log.p[k] = log.p[k] + trimmed_extra
      end
    end
    if log.newest >= at then at = log.newest + 1 end
    local n, x = log.next, units - 1
    for k = 1, LEVELS do
      local index, previous = fl(n / SIZE[k]), fl((n - 1) / SIZE[k])
      if n > 0 and index ~= previous then
        -- The newest node is complete: it is kept (before T only when it holds extra units, settled
        -- there), and the entry starts the next one.
        if n > log.kept or log.q[k] ~= 0 then
          writes[#writes + 1], writes[#writes + 2] = BAND[k] + 2 * previous, nodeName(log.q[k], previous)
        end
        log.q[k] = 0
      end
      log.q[k] = log.q[k] + x
    end
    log.extra, log.newest, log.next, held = log.extra + x - trimmed_extra, at, n + 1, held + units
    log.oldest, log.slid_left, log.slid_extra = oldest, slid - trim, log.slid_extra - trimmed_extra
    -- The bookkeeping member's successor sorts below it, so that it goes by rank with the entries that
    -- left (the mark of a set that was counted by entries, at rank 0 like a bookkeeping member, too).
    local replaced = log.book or (counted_by_entries and redis.call('ZSCORE', key, '!'))
    log.writes = log.writes + 1
    log.book = bookName(log)
    writes[#writes + 1], writes[#writes + 2] = -1 - log.writes, log.book
    -- Marked even for one unit: kFastPath's ZADD of an unmarked member then never finds it here.
    -- LT never moves an entry already there (every entry is older than `at`), so a member policy
    -- that repeats itself cannot take an entry out of its place: the repeat gets a suffix instead.
    local marked = '*' .. struct.pack('>d', units)
    if redis.call('ZADD', key, 'LT', at, marked .. member, unpack(writes)) == #writes / 2 then
      redis.call('ZADD', key, at, marked .. member .. ')' .. text(log.next - 1))
    end
    local last = trim + (replaced and 1 or 0)
    if last > 0 then redis.call('ZREMRANGEBYRANK', key, 1, last) end
    redis.call('PEXPIRE', key, math.max(ttl, math.ceil((log.newest + log.window - now) / 1000)))
    for _, range in ipairs(gone) do redis.call('ZREMRANGEBYSCORE', key, range[1], range[2]) end
    return held
  end

  -- The time until the window is empty: its newest entry's time + window.
  local function resetAfter(log)
    if log.newest == nil then
      log.newest = tonumber(redis.call('ZREVRANGEBYSCORE', log.key, TIMES_END, '(0', 'WITHSCORES', 'LIMIT', 0, 1)[2] or 0)
    end
    return math.max(0, log.newest + log.window - now)
  end

  -- The time until `needed` more units have left the window, after commit: its oldest units leave first,
  -- each at its entry's time + window. The entry holding the last of them is looked for where it costs
  -- least: among the window's first NEAR entries when few units must leave (a refusal of a small cost
  -- by a full window), among the set's newest NEAR when few may stay (a cost near the limit), and
  -- otherwise through the sums. Its time is then read by its name, which costs less than by its rank.
  local function freedAfter(log, needed)
    -- Still counted by entries (a lease refused before any entry of other units was recorded): no sums.
    if log.extra == nil then return countedByEntries().freedAfter(log.key, log.live, needed, log.window) end
    local NEAR = 16
    local entries = log.next - log.oldest  -- in the set; the newest has this rank
    local entry
    if needed <= NEAR then
      local first = log.slid_left + 1  -- the rank of the window's oldest entry
      entry = memberReaching(redis.call('ZRANGE', log.key, first, math.min(first + NEAR - 1, entries)), needed, 0)
    end
    -- The wait's unit counted over the whole set from its oldest entry (those that slid out but are still
    -- there first), and how many of the set's units are newer than it.
    local target = log.slid_left + log.slid_extra + needed
    local staying = entries + log.extra - target
    if not entry and staying < NEAR then
      local newest = redis.call('ZREVRANGEBYSCORE', log.key, TIMES_END, '(0', 'LIMIT', 0, math.min(NEAR, entries))
      entry = memberReaching(newest, staying + 1, 0)
    end
    entry = entry or entryOfUnit(log, target)
    return tonumber(redis.call('ZSCORE', log.key, entry)) + log.window - now
  end

  -- Settles the entry `member` recorded with `recorded` units: it now holds `actual` (0 keeps it as an
  -- entry of no units, so that entries stay numbered), at its own time. A settled entry is marked ('+'
  -- instead of '*'), so settling it again finds nothing; an entry that has left the window, or a key that
  -- expired, is left alone: its units no longer count. Returns 1 when it settled the entry.
  local function settleEntry(key, member, recorded, actual, window)
    -- Recorded as counted by units, or, for one unit, as counted by entries.
    local recorded_member = '*' .. struct.pack('>d', recorded) .. member
    local score = redis.call('ZSCORE', key, recorded_member)
    if not score and recorded == 1 then
      recorded_member = member
      score = redis.call('ZSCORE', key, member)
    end
    if not score or tonumber(score) <= now - window then return 0 end
    -- No two entries share a time, so renamed, the entry keeps its rank.
    local writes, removals = {score, '+' .. struct.pack('>d', actual) .. member}, {recorded_member}
    local delta = actual - recorded
    local lowest = redis.call('ZRANGE', key, 0, 0)
    if lowest[1] == '#' then
      numberEntries(key)
      lowest = redis.call('ZRANGE', key, 0, 0)
    end
    local by_units = lowest[1] ~= nil and string.byte(lowest[1]) == 35
    if delta ~= 0 or by_units then
      local log = {key = key}
      local entries = redis.call('ZCOUNT', key, '(0', TIMES_END)
      local rank = redis.call('ZRANK', key, recorded_member)
      if by_units then
        readBook(log, lowest[1])
        removals[#removals + 1] = lowest[1]
      else
        -- Counted by entries until now, numbered as commit numbers them.
        log.kept = SIZE[LEVELS] * math.ceil(entries / SIZE[LEVELS])
        log.extra, log.oldest, log.q, log.p, log.writes = 0, log.kept - entries, {0, 0, 0, 0}, {0, 0, 0, 0}, 0
        log.newest = tonumber(redis.call('ZREVRANGEBYSCORE', key, TIMES_END, '(0', 'WITHSCORES', 'LIMIT', 0, 1)[2])
        if lowest[1] == '!' then removals[#removals + 1] = '!' else rank = rank + 1 end
      end
      local n, newest = log.oldest + rank - 1, log.oldest + entries - 1
      for k = 1, LEVELS do
        local index = fl(n / SIZE[k])
        if index == fl(newest / SIZE[k]) then
          log.q[k] = log.q[k] + delta
        elseif delta ~= 0 then
          -- A kept node, or one before T, kept from now on.
          local node = redis.call('ZRANGEBYSCORE', key, BAND[k] + 2 * index, BAND[k] + 2 * index)[1]
          local value = node and struct.unpack('>d', node, 2) or 0
          if node then removals[#removals + 1] = node end
          writes[#writes + 1], writes[#writes + 2] = BAND[k] + 2 * index, nodeName(value + delta, index)
        end
      end
      log.extra, log.next = log.extra + delta, log.oldest + entries
      log.writes = log.writes + 1
      writes[#writes + 1], writes[#writes + 2] = -1 - log.writes, bookName(log)
    end
    -- A charge grows the set: its ZADD goes first, so Redis over maxmemory refuses it before any change.
    -- A refund removes first, which frees memory, so it gets in even then.
    if actual > recorded then
      redis.call('ZADD', key, unpack(writes))
      redis.call('ZREM', key, unpack(removals))
    else
      redis.call('ZREM', key, unpack(removals))
      redis.call('ZADD', key, unpack(writes))
    end
    return 1
  end

  return {open = openLog, units = unitsIn, commit = commit, freedAfter = freedAfter, resetAfter = resetAfter,
          settle = settleEntry}
end
)lua";

  /// Every other decision: count, record when admitted (or when refusals count), slide, answer. After
  /// kFastPath, which has read `start` and `live`.
  static constexpr std::string_view kScript = R"lua(
local ttl = tonumber(ARGV[6]) or math.ceil(window / 1000)
local low = lowMembers(key, start, live)
by_units = low[1] ~= nil and string.byte(low[1]) == 35
local allowed = live + cost <= limit
-- A rejected request writes nothing unless the caller opted into the penalty: recording rejections
-- by default would keep a flooded key full forever, admitting no one.
local recorded = record and (allowed or count_rejected)
if not by_units and (cost <= 1 or not recorded) then
  -- Counted by entries, and staying so: what it records holds one unit.
  local entries = countedByEntries()
  local held = live
  if recorded then
    local at_text, at = entries.time(key, now)
    held = held + entries.record(key, at_text, entries.member(ARGV[5]), low[1] == '!')
    entries.expire(key, at, window, ttl)
  end
  entries.trim(key, start, recorded or low[1] == '!', #low < LOW and #low - (low[1] == '!' and 1 or 0) or nil)
  local retry_after = 0
  if not allowed then retry_after = entries.freedAfter(key, held, held + cost - limit, window) end
  -- remaining is below 0 when counted refusals filled the window past the limit
  return {allowed and 1 or 0, limit - held, retry_after, entries.resetAfter(key, window)}
end

local units = countedByUnits()
local log = units.open(key, window, start, live, low)
allowed = units.units(log) + cost <= limit
local member = nil
if record and (allowed or count_rejected) then
  member = ARGV[5]
  if member == nil or member == '' then member = text(math.floor(now / 1000)) end
end
local held = units.commit(log, member, cost, now, ttl)
local retry_after = 0
if not allowed then retry_after = units.freedAfter(log, held + cost - limit) end
return {allowed and 1 or 0, limit - held, retry_after, units.resetAfter(log)}
)lua";

  /// Settles a reservation (RedisLimiter::settle) or gives a lease back (RedisLimiter::giveBack), after
  /// the prelude and kFunctions: ARGV[3] is the units the entry now holds, ARGV[5] its member, ARGV[8]
  /// the units it was recorded with. Returns 1 when it settled the entry now, 0 when there was nothing
  /// to settle.
  static constexpr std::string_view kSettleScriptName = "settle";
  /// The settle script's Lua (kSettleScriptName says what it does).
  static constexpr std::string_view kSettleScript = R"lua(
return countedByUnits().settle(key, ARGV[5], tonumber(ARGV[8]), cost, window)
)lua";

  /// A lease (LeasingLimiter), after the prelude and kFunctions: `cost` units for the request in hand and,
  /// when they fit, up to ARGV[8] units in all, the rest for the holder to use in its own memory until now
  /// + ARGV[9]. They are recorded as one entry at that end (or after the newest entry), so the entry
  /// counts from now until the lease's end + window: every window that holds a use of the lease holds the
  /// entry too (docs/leases.md has the proof). A lease takes at most 1/ARGV[10] of the window's
  /// room (at least `cost`), so other holders are not starved.
  ///   ARGV[8] units wanted in all (cost..limit)   ARGV[9] lease duration (us)   ARGV[10] room divisor
  ///   ARGV[11] the holder's previous lease on this key ('' for none), ARGV[12] its units, ARGV[13] the
  ///            units it used: given back first, so the room it leaves can be leased again at once
  /// Returns {allowed, remaining, retry_after_us, reset_after_us, units recorded (0 when refused)}.
  static constexpr std::string_view kLeaseScriptName = "lease";
  /// The lease script's Lua (kLeaseScriptName says what it does).
  static constexpr std::string_view kLeaseScript = R"lua(
local units = countedByUnits()
if ARGV[11] ~= '' then units.settle(key, ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13]), window) end
local log = units.open(key, window)
local room = limit - units.units(log)
local ttl = tonumber(ARGV[6])
-- Refused when the cost does not fit, and, under a block (algorithm.hpp's kBlockOpening), always.
if cost > room or not record then
  local held = units.commit(log, nil, 0, now, ttl)
  local retry_after = 0
  if cost > room then retry_after = units.freedAfter(log, held + cost - limit) end
  return {0, limit - held, retry_after, units.resetAfter(log), 0}
end
local leased = math.max(cost, math.min(tonumber(ARGV[8]), math.floor(room / tonumber(ARGV[10]))))
local at = now
if leased > cost then at = now + tonumber(ARGV[9]) end
local held = units.commit(log, ARGV[5], leased, at, ttl)
return {1, limit - held, 0, units.resetAfter(log), leased}
)lua";
};

namespace detail {

// What the log's lease() asks for beyond the request in hand (LeasingLimiter fills it in).
struct LeaseTerms {
  std::int64_t units = 0;                 // units wanted in all, the request's cost among them (cost..limit)
  std::chrono::microseconds duration{0};  // how long the holder may use them (0..window)
  std::int64_t room_divisor = 4;          // take at most 1/room_divisor of what the window has room for
  Receipt previous;                       // the holder's previous lease on this key, given back first
  std::int64_t previous_used = 0;         // how many of its units were used
};

// The log's lease(): the decision for the request in hand, and the entry it recorded.
struct LeaseGrant {
  Decision decision;
  Receipt receipt;
};

// The log's limiter: a RedisLimiter's core, and what only a log can do, since it records one entry per
// request: reserve and settle a cost known afterwards, lease units as one entry ahead of now (the
// primitive LeasingLimiter is built on), give a lease back. Their Lua is SlidingWindowLog's above.
template <class KeyPolicy, class MemberPolicy, class TtlPolicy>
class SlidingWindowLimiterCore : public RedisLimiterCore<SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy> {
  using Core = RedisLimiterCore<SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy>;

 public:
  using Core::Core;

  // tryAcquire for a cost known only afterwards (an LLM call's tokens): `estimate` units are decided
  // and, when admitted, recorded as one entry whose receipt settle() takes once the real cost is known.
  // A reservation never settled simply ages out with the window.
  Reservation reserve(std::string_view key, std::int64_t estimate) { return reserve(key, estimate, this->limit()); }
  Reservation reserve(std::string_view key, std::int64_t estimate, const Limit& limit) {
    const ReportedCall call(this->reporting(), key, estimate, limit);
    Reservation reservation;
    try {
      const auto request = calls_.prepare(key, estimate, limit);
      const Decision decision = request.decide(*redis_->run(request.call()));
      // A refusal is recorded too when rejections count: then it has an entry to settle as well.
      if (decision.allowed || this->options().rejected == RejectedRequests::counted) {
        reservation.receipt = request.receipt();
      }
      reservation.decision = call.report(decision);
    } catch (const Error&) {
      reservation.decision = call.reportFailure(std::current_exception());
    }
    return reservation;
  }

  // The reservation now holds `actual` units: the difference is refunded (actual below the estimate; 0
  // takes it all back) or charged (above it: recorded even past the limit, since the units were spent),
  // exactly, at the reservation's own time. Settling twice changes nothing the second time, and a
  // reservation that has left the window (or whose receipt is empty) is left alone. Returns whether
  // this call settled it. Errors are thrown, whatever the failure policy (there is no decision to make).
  bool settle(const Receipt& receipt, std::int64_t actual) { return runSettleScript(receipt, actual, "settle"); }

  // The primitive LeasingLimiter is built on (use that): `cost` units for `key` decided now and, when
  // they fit, up to `terms.units` recorded in all as one entry scored at now + terms.duration, after
  // `terms.previous` is given back. Units beyond `cost` may be used in memory until terms.duration after
  // a moment on a monotonic clock read before this call was sent, and never later: the guarantee rests
  // on it. LeaseGrant::receipt.units is what was recorded (0 when refused; `cost` alone when no more fit or
  // were asked for, and then nothing is leased).
  LeaseGrant lease(std::string_view key, std::int64_t cost, const LeaseTerms& terms) {
    return lease(key, cost, this->limit(), terms);
  }
  LeaseGrant lease(std::string_view key, std::int64_t cost, const Limit& limit, const LeaseTerms& terms) {
    const auto request = calls_.prepare(key, cost, limit);
    checkTerms(terms, cost, limit, key);
    const typename Calls::LeaseTexts texts{IntegerText(terms.units), IntegerText(terms.duration.count()),
                                           IntegerText(terms.room_divisor), IntegerText(terms.previous.units),
                                           IntegerText(terms.previous_used)};
    const Reply reply = redis_->run(calls_.leaseCall(request, texts, terms.previous));
    std::int64_t values[5];
    readIntegers(*reply, values, 5);
    LeaseGrant lease;
    lease.decision = checkedDecision(values[0], values[1], values[2], values[3], limit.max_requests);
    const std::int64_t units = values[4];
    if (lease.decision.allowed ? units < cost || units > std::max(cost, terms.units) : units != 0) {
      throw badReply(std::to_string(units) + " units leased for a request of " + std::to_string(cost) + " asking " +
                     std::to_string(terms.units));
    }
    if (lease.decision.allowed) {
      lease.receipt = request.receipt();
      lease.receipt.units = units;
    }
    return lease;
  }

  // Gives a lease back (LeasingLimiter): of its units only `used` still count, until its end + window.
  // Returns whether there was anything to give back.
  bool giveBack(const Receipt& lease, std::int64_t used) { return runSettleScript(lease, used, "giveBack"); }

 private:
  using Core::calls_;
  using Core::redis_;
  using typename Core::Calls;

  bool runSettleScript(const Receipt& receipt, std::int64_t actual, std::string_view call) {
    if (!receipt) return false;
    if (actual < 0 || actual >= kLargestExact) {
      throw InvalidArgument(std::string(SlidingWindowLog::kName) + "::" + std::string(call) + ": " +
                            std::to_string(actual) + " units are not in 0..2^53-1 (key " + quoted(receipt.redis_key) +
                            ")");
    }
    const typename Calls::SettleTexts texts = calls_.settleTexts(receipt, actual);
    return redis_->run(calls_.settleCall(receipt, texts))->integer() == 1;
  }

  void checkTerms(const LeaseTerms& terms, std::int64_t cost, const Limit& limit, std::string_view key) const {
    const auto refuse = [&](const std::string& why) {
      return InvalidArgument(std::string(SlidingWindowLog::kName) + "::lease: " + why + " (key " + quoted(key) + ")");
    };
    if (terms.units < cost || terms.units > limit.max_requests) {
      throw refuse(std::to_string(terms.units) + " units wanted, not in cost " + std::to_string(cost) + "..limit " +
                   std::to_string(limit.max_requests));
    }
    if (terms.duration.count() < 0 || terms.duration > limit.window) {
      throw refuse("a lease of " + std::to_string(terms.duration.count()) + " us is not in 0..the window");
    }
    if (terms.room_divisor < 1) throw refuse("room_divisor " + std::to_string(terms.room_divisor) + " is below 1");
    if (terms.previous && (terms.previous_used < 0 || terms.previous_used > terms.previous.units)) {
      throw refuse("the previous lease used " + std::to_string(terms.previous_used) + " of its " +
                   std::to_string(terms.previous.units) + " units");
    }
  }
};

}  // namespace detail

/// An exact sliding window log on one Redis key per limited key: swl's main limiter. Constructed as
/// `SlidingWindowLimiter<>(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = {},
/// MemberPolicy members = {}, TtlPolicy ttl = {})`; the client must outlive it. Beside the contract's calls
/// (limiter.hpp) it has reserve(), settle(), lease() and giveBack().
template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using SlidingWindowLimiter = LimiterFace<detail::SlidingWindowLimiterCore<KeyPolicy, MemberPolicy, TtlPolicy>>;

static_assert(keepsLimiterContract<SlidingWindowLimiter<>>());

}  // namespace swl
