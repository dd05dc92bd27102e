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
#include <array>
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
-- entries (one ZCOUNT), and it holds its mark beside them (score 0): '!' and the window, in
-- microseconds, of the calls that recorded its entries. Once an entry of other units is recorded, or
-- a call brings a window that must remember more than the mark can, it is "counted by units" until it
-- empties: its new entries all carry their units (one too), and it holds its bookkeeping ('#...')
-- instead of the mark, with sums that keep every count and search bounded (logSums below).
-- The horizon: an entry at or before the start of the window of a call that recorded an entry has
-- left for good, whatever window a later call brings (a widened window does not bring back what a
-- shorter one let go). The bookkeeping stores it; a set counted by entries reads it off its newest
-- entry's time less the window in its mark, or, once an entry was recorded ahead of its call's clock,
-- off the mark itself ('@' and the horizon after the window).
-- Entries that slid out are removed a few at a time, by calls that record: no call's work grows with
-- the window, and a refusal or a peek writes nothing.
local TIMES_END = '(9007199254740992'  -- every entry's time lies below 2^53; sums lie outside
local TRIM, TRIM_EVERY = 16, 8         -- counted by entries: at most TRIM, on one call in TRIM_EVERY
local UNITS_TRIM = 8                   -- counted by units: at most UNITS_TRIM, on every call that records
local LOW = UNITS_TRIM + 3             -- members read at or below a window's start: marks, then entries
)lua";

  /// The busiest paths, run before kParts and kFunctions define anything (a Lua function costs Redis on
  /// every call that defines it): on Redis's clock, one unit that a set counted by entries under this
  /// window has room for, and a refusal or peek of such a set, which records nothing. They take the steps
  /// of kFunctions' window, written out. An admission is recorded before it is known how the set counts:
  /// ZADD adds the entry and the mark for this window, and answers how many it added. A set counted by
  /// entries under this window has its mark (1, or 0 for a member policy that repeats itself); a new set
  /// holds nothing else at or below 0. Any other set (counted by units, or marked for another window)
  /// takes both back and goes on to kScript.
  static constexpr std::string_view kFastPath = R"lua(
local start = text(now - window)
local live = redis.call('ZCOUNT', key, '(' .. start, TIMES_END)
if redis_time then
  local mark = '!' .. ARGV[1]
  if cost == 1 and record and live < limit then
    local member = ARGV[5]
    if member == nil or member == '' then member = text(math.floor(now / 1000)) end
    local added = redis.call('ZADD', key, 'NX', now_text, member, 0, mark)
    if added == 2 and redis.call('ZCOUNT', key, '-inf', 0) > 1 then
      redis.call('ZREM', key, mark, member)
    else
      redis.call('PEXPIRE', key, ARGV[6] or math.ceil(window / 1000))
      if now % TRIM_EVERY == 0 then
        -- Up to TRIM entries that slid out go, the oldest first (after the mark).
        local slid = redis.call('ZCOUNT', key, '(0', start)
        if slid > TRIM then
          redis.call('ZREMRANGEBYRANK', key, 1, TRIM)
        elseif slid > 0 then
          redis.call('ZREMRANGEBYSCORE', key, '(0', start)
        end
      end
      return {1, limit - live - (added > 0 and 1 or 0), 0, window}
    end
  elseif (cost == 0 or (live + cost > limit and not count_rejected)) and redis.call('ZSCORE', key, mark) then
    local answer = {1, limit - live, 0, 0}
    if live > 0 then answer[4] = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) + window - now end
    if cost > 0 then
      -- The same cost fits once the (live + cost - limit)-th oldest entry in the window has left:
      -- the (limit - cost + 1)-th newest.
      local rank = cost - limit - 1
      answer[1], answer[3] = 0, tonumber(redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')[2]) + window - now
    end
    return answer
  end
end
)lua";

  /// The log's parts without I/O, run before kFunctions: the sums a set counted by units keeps, and the
  /// searches over them. Their reads and writes come in as methods of an `io` object, so they are tested
  /// alone in plain Lua 5.1 (tests/lua/test_log_sums.lua).
  static constexpr std::string_view kParts = R"lua(
-- The log's sums: what keeps every count and every search over a set counted by units bounded. A part
-- without I/O: it reads and writes the set only through `io`, so it is tested alone, in plain Lua 5.1,
-- against a brute-force model (tests/lua/test_log_sums.lua); the log's functions wire `io` to redis.call.
--
-- Entries are numbered in time order from 0; the set holds those numbered `oldest` .. `next` - 1 (the
-- older ones left it). An entry's extra units are its units less one, so that a run of one-unit
-- entries sums to nothing and needs no node. A node of level k (1..LEVELS) sums the extra units of the
-- SIZE[k] entries numbered j SIZE[k] .. (j + 1) SIZE[k] - 1, those that left the set included. Each
-- level's newest node, the one holding entry next - 1, is still open and lives in the bookkeeping
-- (`tail`); an older node is stored once complete, only when it is not 0, and dropped once every entry
-- of it has left. So a count or a search reads at most one run of FANOUT nodes per level and FANOUT
-- entries (more at the top level only past 16 x 65,536 entries), and a write changes at most one node
-- per level: nothing grows with the window or with a request's cost.
--
-- The bookkeeping (`book`), one member of the set: '#' and fifteen big-endian doubles, in this order:
--   extra      the extra units of the entries in the set
--   oldest     the number of the oldest entry in the set
--   next       the number the next entry recorded gets
--   newest     the newest entry's time (us)
--   last_unit  the time of the newest entry that holds a unit; -1 while unknown (after a settle took
--              that entry's units): the window empties once it has left
--   horizon    the latest window start of a call that recorded an entry: entries at or before it have
--              left for good, whatever window a later call brings
--   writes     how many times the bookkeeping was written (it is scored -1 - writes)
--   tail[1..LEVELS]  the sum of each level's open node
--   gone[1..LEVELS]  the extra units of the entries of each level's oldest node that left the set
-- (newest, last_unit, horizon and writes are the log's: the sums carry them and never read them.)
--
-- `io` gives the set's reads and writes, each in entry numbers:
--   io:nodes(level, first, last)           the sums of the nodes first..last of `level`, in order (a
--                                          list from 1; 0 for a node not stored)
--   io:entries(first, last)                the units of the entries first..last, oldest first
--   io:writeNode(level, index, sum, was)   stores a node (sum 0: removes it); `was` its stored sum or nil
--   io:dropNodes(level, first, last)       removes the stored nodes first..last of `level`
-- `pack` and `unpack` are struct.pack and struct.unpack (Redis's Lua has them).
local function logSums(pack, unpack)
  local LEVELS = 4
  local SIZE = {16, 256, 4096, 65536}  -- 16 ^ level: quotients of entry numbers below 2^52 are exact
  local FIELDS = '>ddddddddddddddd'   -- 7 + 2 LEVELS doubles
  local floor = math.floor

  -- A set of `count` entries of one unit each, numbered 0 .. count - 1: one-unit entries need no node.
  local function fresh(count)
    return {extra = 0, oldest = 0, next = count, newest = 0, last_unit = 0, horizon = 0, writes = 0,
            tail = {0, 0, 0, 0}, gone = {0, 0, 0, 0}}
  end

  -- The bookkeeping member's name for `book`, and back; nil for a name of another layout (0.2's or 0.3's).
  local function encode(book)
    local tail, gone = book.tail, book.gone
    return '#' .. pack(FIELDS, book.extra, book.oldest, book.next, book.newest, book.last_unit, book.horizon,
                       book.writes, tail[1], tail[2], tail[3], tail[4], gone[1], gone[2], gone[3], gone[4])
  end
  local function decode(name)
    if #name ~= 121 or string.byte(name) ~= 35 then return nil end  -- '#' and the fifteen doubles
    local extra, oldest, next, newest, last_unit, horizon, writes, t1, t2, t3, t4, g1, g2, g3, g4 =
      unpack(FIELDS, name, 2)
    return {extra = extra, oldest = oldest, next = next, newest = newest, last_unit = last_unit, horizon = horizon,
            writes = writes, tail = {t1, t2, t3, t4}, gone = {g1, g2, g3, g4}}
  end

  -- The units of the entries in the set.
  local function total(book) return book.next - book.oldest + book.extra end

  -- Records the entry numbered `next`, of `units`. Each level's open node is closed when the entry
  -- starts the next one: the one roll-over, written once.
  local function add(book, io, units)
    local number, extra, tail = book.next, units - 1, book.tail
    for level = 1, LEVELS do
      local size = SIZE[level]
      if number % size == 0 and number > 0 then
        -- Stored unless it sums to nothing, or every entry of it already left the set.
        if tail[level] ~= 0 and number > book.oldest then io:writeNode(level, number / size - 1, tail[level], nil) end
        tail[level] = 0
      end
      tail[level] = tail[level] + extra
    end
    book.extra, book.next = book.extra + extra, number + 1
  end

  -- Entry `number` (in the set) now holds `delta` units more (fewer, when below 0).
  local function change(book, io, number, delta)
    if delta == 0 then return end
    for level = 1, LEVELS do
      local index = floor(number / SIZE[level])
      if index == floor((book.next - 1) / SIZE[level]) then
        book.tail[level] = book.tail[level] + delta
      else
        local was = io:nodes(level, index, index)[1]
        io:writeNode(level, index, was + delta, was ~= 0 and was or nil)
      end
    end
    book.extra = book.extra + delta
  end

  -- The `#units` oldest entries leave the set; `units` holds their units, oldest first. Each level's
  -- oldest node counts what left of it, and nodes left wholly behind go.
  local function trim(book, io, units)
    local count = #units
    if count == 0 then return end
    local from, to, left = book.oldest, book.oldest + count, 0
    for i = 1, count do left = left + units[i] - 1 end
    for level = 1, LEVELS do
      local size = SIZE[level]
      local was, is = floor(from / size), floor(to / size)
      if is > was then
        io:dropNodes(level, was, is - 1)
        local gone = 0
        for i = is * size - from + 1, count do gone = gone + units[i] - 1 end
        book.gone[level] = gone
      else
        book.gone[level] = book.gone[level] + left
      end
    end
    book.extra, book.oldest = book.extra - left, to
  end

  return {LEVELS = LEVELS, SIZE = SIZE, fresh = fresh, encode = encode, decode = decode, total = total, add = add,
          change = change, trim = trim}
end

-- The searches over the log's sums, built only for the calls that search: a Lua function costs Redis
-- on every call that defines it. Each reads at most one run of FANOUT nodes per level, from the highest
-- level whose nodes span the range down, then at most FANOUT entries.
local function logSearches(sums)
  local FANOUT, LEVELS, SIZE = 16, sums.LEVELS, sums.SIZE
  local floor, min, max = math.floor, math.min, math.max

  -- The lowest level whose nodes over entries first..last number at most FANOUT (those entries share a
  -- node of the level above); 0 when they share a node of level 1.
  local function spanLevel(first, last)
    local level = 0
    while level < LEVELS and floor(first / SIZE[level + 1]) ~= floor(last / SIZE[level + 1]) do level = level + 1 end
    return level
  end

  -- Adds the units in the set of the nodes first..last of `level` to `before`, oldest first, stopping at
  -- the first node that brings the sum to `target`, or at `last`: returns that node's index and the sums
  -- before it and through it. A node's sum is in `tail` while it is open; of the oldest node only
  -- its entries still in the set count. One call per level and none per node: a Lua call costs more
  -- than a node's sum.
  local function scan(book, io, level, first, last, target, before)
    local size, oldest, next = SIZE[level], book.oldest, book.next
    local stored, open, oldest_node = io:nodes(level, first, last), floor((next - 1) / size), floor(oldest / size)
    for index = first, last do
      local units = size + (index == open and book.tail[level] or stored[index - first + 1])
      if index == oldest_node then units = units - (oldest - index * size) - book.gone[level] end
      if index == open then units = units - ((index + 1) * size - next) end
      if before + units >= target or index == last then return index, before, before + units end
      before = before + units
    end
  end

  -- The units of the entries in the set numbered below `number`: whole nodes from the highest level
  -- down, then the few entries after the last of them.
  local function unitsBefore(book, io, number)
    local from, units = book.oldest, 0
    if number <= from then return 0 end
    for level = spanLevel(from, number - 1), 1, -1 do
      local size = SIZE[level]
      local first, stop = floor(from / size), floor(number / size)  -- nodes first..stop - 1 lie before
      if stop > first then
        local _
        _, _, units = scan(book, io, level, first, stop - 1, math.huge, units)
        from = stop * size
      end
    end
    local entries = io:entries(from, number - 1)
    for i = 1, #entries do units = units + entries[i] end
    return units
  end

  -- The entry holding the set's `target`-th unit, counted from its oldest entry (1 <= target <=
  -- sums.total): its number and the units before it; nil when the set holds fewer units. A descent: at
  -- each level, the node where the count reaches `target`, then the entries of the last node.
  local function entryOfUnit(book, io, target)
    local from, last, before = book.oldest, book.next - 1, 0
    for level = spanLevel(from, last), 1, -1 do
      local size, index = SIZE[level], nil
      index, before = scan(book, io, level, floor(from / size), floor(last / size), target, before)
      from, last = max(from, index * size), min(last, (index + 1) * size - 1)
    end
    local entries = io:entries(from, last)
    for i = 1, #entries do
      if before + entries[i] >= target then return from + i - 1, before end
      before = before + entries[i]
    end
    return nil
  end

  return {unitsBefore = unitsBefore, entryOfUnit = entryOfUnit}
end
)lua";

  /// The log's steps, shared by its scripts below and MultiLimiter's, which keeps one log per rule. A
  /// decision on one key is two phases: openWindow reads the window (for every rule of a MultiLimiter
  /// before any is recorded), closeWindow records the request or nothing; answerOf then answers. What
  /// only a set counted by units needs is built only for such a set (countedByUnits): a Lua function
  /// costs Redis on every call that defines it. Numbers go to redis.call as numbers where they can: Redis
  /// formats them with 17 significant digits, exact below 2^53 (unlike Lua's own 14 when concatenating).
  static constexpr std::string_view kFunctions = R"lua(
local openWindow  -- phase one, below: settling a set counted by units opens its window too

local function newestTime(key)
  return tonumber(redis.call('ZREVRANGEBYSCORE', key, TIMES_END, '(0', 'WITHSCORES', 'LIMIT', 0, 1)[2] or 0)
end

-- The time to record an entry at, from `at` (a number): 1 us after the newest entry when that is not
-- later. Redis's clock is trusted to have moved on since the last script.
local function entryTime(w, at)
  if redis_time and at == now and not w.book then return at end
  local newest = w.book and w.book.newest or w.newest or newestTime(w.key)
  if newest >= at then at = newest + 1 end
  return at
end

-- A set counted by units ----------------------------------------------------------------------------
-- Its bookkeeping and sums (logSums). A window of such a set is the sums' `io` too (the Window methods
-- below): entries are read by rank, the bookkeeping member at rank 0, and remembered by number in
-- w.read; writes are gathered in w.writes (score, member pairs for one ZADD), w.removals (members) and
-- w.dropped (score ranges).
local units = nil  -- built once a call meets a set counted by units
local function countedByUnits()
  if units then return units end
  local log_sums = logSums(struct.pack, struct.unpack)
  -- 2^53 and 2^50 beyond it, again and again: the scores of each level's nodes (even numbers)
  local NODE_BAND = {9007199254740992, 10133099161583616, 11258999068426240, 12384898975268864}

  -- An entry's units: '*' or '+' and a double, then the member; 0.2's 'member*units' and
  -- 'member=units'; otherwise one.
  local function unitsOf(member)
    local mark = string.byte(member)
    if mark == 42 or mark == 43 then return (struct.unpack('>d', member, 2)) end  -- '*' or '+'
    local at = string.find(member, '[*=]%d+$')
    return at and tonumber(string.sub(member, at + 1)) or 1
  end

  -- A node's member: '#', its level, its sum and its index (two big-endian doubles). The sum is in the
  -- name so that a run of nodes is one read of names (Redis formats every score it returns); the level
  -- keeps names of equal sums and indexes on different levels apart.
  local function nodeName(level, sum, index) return '#' .. string.char(level) .. struct.pack('>dd', sum, index) end

  local function writeNode(self, level, index, sum, was)
    if was then
      self.removals = self.removals or {}
      self.removals[#self.removals + 1] = nodeName(level, was, index)
    end
    if sum ~= 0 then
      local writes = self.writes or {}
      writes[#writes + 1], writes[#writes + 2] = NODE_BAND[level] + 2 * index, nodeName(level, sum, index)
      self.writes = writes
    end
  end
  local function dropNodes(self, level, first, last)
    self.dropped = self.dropped or {}
    self.dropped[#self.dropped + 1] = {NODE_BAND[level] + 2 * first, NODE_BAND[level] + 2 * last}
  end
  local Window = {writeNode = writeNode, dropNodes = dropNodes}
  Window.__index = Window

  -- Phase one for a set counted by units, whose bookkeeping `book` openWindow read first of `low` (the
  -- set's first members at or below the window's start): the units the window holds, and the entries
  -- that slid out but are still in the set (slid, their units slid_units; the units of the first of
  -- them, which low holds, oldest first: slid_read).
  local function open(w, book, low)
    local key = w.key
    setmetatable(w, Window)
    w.book, w.horizon = book, book.horizon
    local from = 2
    -- A mark beside a bookkeeping member: kFastPath leaves one when a member policy repeats a member
    -- recorded before the set was counted by units. It goes before any rank is read.
    while low[from] ~= nil and string.byte(low[from]) == 33 do
      redis.call('ZREM', key, low[from])
      from = from + 1
    end
    if book.horizon > w.start then
      w.start, w.live = book.horizon, redis.call('ZCOUNT', key, '(' .. text(book.horizon), TIMES_END)
    end
    local slid_read = {}
    for i = from, #low do slid_read[i - from + 1] = unitsOf(low[i]) end
    w.slid, w.slid_read = book.next - book.oldest - w.live, slid_read
    if w.live == 0 then
      w.slid_units = log_sums.total(book)  -- everything in the set slid out: no search
    elseif w.slid == #slid_read then
      w.slid_units = 0
      for i = 1, #slid_read do w.slid_units = w.slid_units + slid_read[i] end
    else
      w.slid_units = units.searching().searches.unitsBefore(book, w, book.oldest + w.slid)
    end
    w.held = log_sums.total(book) - w.slid_units
  end

  -- A set counted by entries turned into one counted by units: its entries (all of one unit) numbered
  -- from 0, its horizon and its newest times kept in the bookkeeping. Its marks go by rank after the
  -- new bookkeeping member, as an old bookkeeping member does.
  local function countByUnits(w)
    local entries = redis.call('ZCOUNT', w.key, '(0', TIMES_END)
    local book = log_sums.fresh(entries)
    w.newest = w.newest or newestTime(w.key)
    book.newest, book.last_unit, book.horizon = w.newest, w.newest, w.horizon or 0
    setmetatable(w, Window)
    w.book, w.replaced = book, #w.marks
    w.slid = entries - w.live
    w.slid_units = w.slid
    w.slid_read = {}
    for i = 1, #w.low do w.slid_read[i] = 1 end
  end

  -- Records `count` units for `member` at `at`, or 1 us after the newest entry when that is not later,
  -- and removes up to UNITS_TRIM entries that slid out. The entry's ZADD is the script's first write: a
  -- Redis over maxmemory refuses a script's first write that could grow memory (OOM) before anything
  -- changed, but lets every later write through.
  local function record(w, member, count, at, ttl)
    local book, key, trimmed = w.book, w.key, w.slid_read
    if #trimmed > w.slid or #trimmed > UNITS_TRIM then
      trimmed = {}
      for i = 1, math.min(w.slid, UNITS_TRIM) do trimmed[i] = w.slid_read[i] end
    end
    for i = 1, #trimmed do w.slid_units = w.slid_units - trimmed[i] end
    log_sums.trim(book, w, trimmed)
    w.slid = w.slid - #trimmed
    local recorded = entryTime(w, at)
    log_sums.add(book, w, count)
    -- The call's own window moves the horizon, a lease's too, whose entry lies ahead of now.
    if now - w.window > book.horizon then book.horizon = now - w.window end
    book.newest = recorded
    if count > 0 then book.last_unit = recorded end
    book.writes = book.writes + 1
    local writes = w.writes
    if writes then
      writes[#writes + 1], writes[#writes + 2] = -1 - book.writes, log_sums.encode(book)
    else
      writes = {-1 - book.writes, log_sums.encode(book)}
    end
    -- Marked even for one unit: kFastPath's ZADD of an unmarked member then never finds it here.
    -- LT never moves an entry already there (every entry is older than `recorded`), so a member policy
    -- that repeats itself cannot take an entry out of its place: the repeat gets a suffix instead.
    local named = '*' .. struct.pack('>d', count) .. member
    if redis.call('ZADD', key, 'LT', recorded, named, unpack(writes)) == #writes / 2 then
      redis.call('ZADD', key, recorded, named .. ')' .. text(book.next - 1))
    end
    -- The old bookkeeping member (or the marks) sorts after the new one, then the entries that left.
    redis.call('ZREMRANGEBYRANK', key, 1, #trimmed + (w.replaced or 1))
    if w.removals then redis.call('ZREM', key, unpack(w.removals)) end
    if w.dropped then
      for _, range in ipairs(w.dropped) do redis.call('ZREMRANGEBYSCORE', key, range[1], range[2]) end
    end
    redis.call('PEXPIRE', key, math.max(ttl, math.ceil((recorded + w.window - now) / 1000)))
    w.held = w.held + count
  end

  -- The time of the newest entry that holds a unit. After a settle took that entry's units it is the
  -- one holding the set's last unit, found through the sums (and kept from the next write on).
  local function lastUnit(w)
    local book = w.book
    if book.last_unit < 0 then
      local number = units.searching().searches.entryOfUnit(book, w, log_sums.total(book))
      book.last_unit = tonumber(redis.call('ZSCORE', w.key, w.read[number - w.read_from + 1]))
    end
    return book.last_unit
  end

  -- What a call seldom needs is built into `units` and Window the first time it is asked for, a Lua
  -- function costing Redis on every call that defines it: a search through the sums (searching), and a
  -- settle or the numbering of an older set (changing).
  local function searching()
    if units.searches then return units end
    local NEAR = 16  -- entries read at once where a search costs least
    units.searches = logSearches(log_sums)

    -- A run of at most FANOUT sums (more only at the top level past 2^20 entries), built at that size.
    function Window:nodes(level, first, last)
      local names = redis.call('ZRANGEBYSCORE', self.key, NODE_BAND[level] + 2 * first, NODE_BAND[level] + 2 * last)
      local count, unpack = #names, struct.unpack
      if count == last - first + 1 then  -- every node stored: each name's place is its index
        for i = 1, count do names[i] = unpack('>d', names[i], 3) end
        return names
      end
      local found = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
      for i = 17, last - first + 1 do found[i] = 0 end
      for i = 1, count do
        local sum, index = unpack('>dd', names[i], 3)
        found[index - first + 1] = sum
      end
      return found
    end
    -- The entries read last are kept with the number of the first: a search names the one it found.
    function Window:entries(first, last)
      local base, found, byte, unpack = self.book.oldest - 1, {}, string.byte, struct.unpack
      local read = redis.call('ZRANGE', self.key, first - base, last - base)
      self.read, self.read_from = read, first
      for i = 1, #read do
        -- unitsOf written out for this layout's entries: a Lua call per entry costs as much as its unpack
        local member = read[i]
        local mark = byte(member)
        found[i] = (mark == 42 or mark == 43) and unpack('>d', member, 2) or unitsOf(member)
      end
      return found
    end

    -- The first of `members` whose units, added in turn to `before`, bring the sum to `target` (nil
    -- when none does).
    local function memberReaching(members, target, before)
      for i = 1, #members do
        before = before + unitsOf(members[i])
        if before >= target then return members[i] end
      end
      return nil
    end

    -- The time until `needed` more units have left the window, after phase two: the entry holding that
    -- unit is looked for where it costs least: among the window's first NEAR entries when few units
    -- must leave (a refusal of a small cost by a full window), among the set's newest NEAR when few may
    -- stay (a cost near the limit), and otherwise through the sums. Its time is then read by its name,
    -- which costs less than by its rank.
    function units.freedAfter(w, needed)
      local book, key = w.book, w.key
      local entries = book.next - book.oldest  -- in the set; the newest has this rank
      local entry = nil
      if needed <= NEAR then
        local first = w.slid + 1  -- the rank of the window's oldest entry
        entry = memberReaching(redis.call('ZRANGE', key, first, math.min(first + NEAR - 1, entries)), needed, 0)
      end
      -- The wait's unit counted over the whole set from its oldest entry (those that slid out but are
      -- still there first), and how many of the set's units are newer than it.
      local target = w.slid_units + needed
      local staying = log_sums.total(book) - target
      if not entry and staying < NEAR then
        local newest = redis.call('ZREVRANGEBYSCORE', key, TIMES_END, '(0', 'LIMIT', 0, math.min(NEAR, entries))
        entry = memberReaching(newest, staying + 1, 0)
      end
      if not entry then
        local number = units.searches.entryOfUnit(book, w, target)
        entry = number and w.read[number - w.read_from + 1] or error('swl: the log ' .. key .. ' holds fewer units than its sums say')
      end
      return tonumber(redis.call('ZSCORE', key, entry)) + w.window - now
    end

    return units
  end

  local function changing()
    if units.settle then return units end
    searching()

    -- Numbers the entries of a set written by swl 0.2 or 0.3 ('#' alone, or a bookkeeping member of
    -- another layout, nodes named without their level) and keeps their sums in this layout. Once per
    -- such set: its work grows with the set, as 0.2's own did. Nothing is known of its horizon, so none
    -- is kept.
    function units.renumber(key)
      local entries = redis.call('ZRANGEBYSCORE', key, '(0', TIMES_END, 'WITHSCORES')
      redis.call('ZREMRANGEBYSCORE', key, '-inf', 0)
      redis.call('ZREMRANGEBYSCORE', key, NODE_BAND[1], '+inf')
      local w = setmetatable({key = key}, Window)
      local book = log_sums.fresh(0)
      for i = 1, #entries, 2 do
        local entry_units, at = unitsOf(entries[i]), tonumber(entries[i + 1])
        log_sums.add(book, w, entry_units)
        book.newest = at
        if entry_units > 0 then book.last_unit = at end
      end
      local writes = w.writes or {}
      writes[#writes + 1], writes[#writes + 2] = -1, log_sums.encode(book)
      for from = 1, #writes, 4000 do
        redis.call('ZADD', key, unpack(writes, from, math.min(from + 3999, #writes)))
      end
    end

    -- Settles the entry `member` recorded with `recorded` units in a window of `window` us: it now
    -- holds `actual` (0 keeps it as an entry of no units, so that entries stay numbered), at its own
    -- time. A settled entry is marked ('+' instead of '*'), so settling it again finds nothing; an entry
    -- that has left the window, or a key that expired, is left alone: its units no longer count.
    -- Returns 1 when it settled the entry.
    function units.settle(key, member, recorded, actual, window)
      -- Recorded as counted by units, or, for one unit, as counted by entries.
      local recorded_member = '*' .. struct.pack('>d', recorded) .. member
      local score = redis.call('ZSCORE', key, recorded_member)
      if not score and recorded == 1 then
        recorded_member = member
        score = redis.call('ZSCORE', key, member)
      end
      if not score then return 0 end
      score = tonumber(score)
      local start = now - window
      local w = openWindow(key, window, text(window), start, redis.call('ZCOUNT', key, '(' .. text(start), TIMES_END))
      if score <= w.start then return 0 end
      local delta = actual - recorded
      local settled = '+' .. struct.pack('>d', actual) .. member
      if not w.book and delta == 0 then
        -- No two entries share a time, so renamed, the entry keeps its rank.
        redis.call('ZADD', key, score, settled)
        redis.call('ZREM', key, recorded_member)
        return 1
      end
      local ranked_before = 1  -- members before the entries: the bookkeeping, or a set's marks
      if not w.book then
        units.countByUnits(w)
        ranked_before = w.replaced
      end
      local book = w.book
      log_sums.change(book, w, book.oldest + redis.call('ZRANK', key, recorded_member) - ranked_before, delta)
      if actual == 0 and score == book.last_unit then book.last_unit = -1 end
      book.writes = book.writes + 1
      local writes = w.writes or {}
      writes[#writes + 1], writes[#writes + 2] = score, settled
      writes[#writes + 1], writes[#writes + 2] = -1 - book.writes, log_sums.encode(book)
      w.removals = w.removals or {}
      w.removals[#w.removals + 1] = recorded_member
      -- A charge grows the set: its ZADD goes first, so Redis over maxmemory refuses it before any
      -- change. A refund removes first, which frees memory, so it gets in even then.
      if delta > 0 then redis.call('ZADD', key, unpack(writes)) end
      redis.call('ZREM', key, unpack(w.removals))
      if delta <= 0 then redis.call('ZADD', key, unpack(writes)) end
      -- The old bookkeeping member (or the marks) sorts after the new one.
      redis.call('ZREMRANGEBYRANK', key, 1, w.replaced or 1)
      return 1
    end
    return units
  end
  units = {sums = log_sums, NODE_BAND = NODE_BAND, unitsOf = unitsOf, open = open, countByUnits = countByUnits,
           record = record, lastUnit = lastUnit, searching = searching, changing = changing, searches = nil,
           freedAfter = nil, renumber = nil, settle = nil}
  return units
end

-- Phase one: one key's window as this call finds it, for a window of `window` microseconds (sent as
-- `window_text`) ending now, which starts at `start` and holds `live` entries after it: how its set
-- counts, where the window really starts (the horizon may lie later), and the units it holds (held).
openWindow = function(key, window, window_text, start, live, start_text)
  -- The fields a window of a set counted by units takes, named at once (nil ones too) so that its table
  -- is built at its size once instead of growing field by field.
  local w = {key = key, window = window, window_text = window_text, start = start, live = live, held = live,
             quiet = false, book = nil, horizon = nil, slid_read = nil, slid = nil, slid_units = nil, writes = nil}
  local low = redis.call('ZRANGEBYSCORE', key, '-inf', start_text or text(start), 'LIMIT', 0, LOW)
  w.quiet = live == 0 and #low == LOW  -- a window that holds nothing over many entries that slid out
  if low[1] ~= nil and string.byte(low[1]) == 35 then  -- '#': a bookkeeping member
    local units = countedByUnits()
    local book = units.sums.decode(low[1])
    if not book then
      units.changing().renumber(key)
      return openWindow(key, window, window_text, start, live)
    end
    units.open(w, book, low)
    return w
  end
  -- Counted by entries: its marks sort first. The mark says where the horizon lies: '!' and the window
  -- of the call that recorded the newest entry, whose start it is; or, when that entry was recorded
  -- ahead of its call's clock (1 us after the one before), '@' and the horizon after them. A set of 0.3,
  -- marked '!' alone, has none: nothing in it has left for good.
  w.mark, w.marks, w.low = '!' .. window_text, {}, {}
  for _, member in ipairs(low) do
    if string.byte(member) == 33 and #w.low == 0 then w.marks[#w.marks + 1] = member else w.low[#w.low + 1] = member end
  end
  if w.marks[1] ~= nil and w.marks[1] ~= w.mark then
    local marked_window, horizon = string.match(w.marks[1], '^!(%d+)@?(%d*)$')
    if horizon ~= nil and horizon ~= '' then
      w.horizon = tonumber(horizon)
    elseif marked_window ~= nil then
      w.newest = newestTime(key)
      if w.newest > 0 then w.horizon = w.newest - tonumber(marked_window) end
    end
  elseif w.marks[1] ~= nil and not redis_time then
    -- Under the mark's own window, on Redis's clock, the horizon never lies past this window's start.
    w.newest = newestTime(key)
    w.horizon = w.newest - window
  end
  if w.horizon ~= nil and w.horizon > start then
    w.start, w.live = w.horizon, redis.call('ZCOUNT', key, '(' .. text(w.horizon), TIMES_END)
  end
  w.held = w.live
  return w
end

-- Phase two: records `count` units for `member` at `at` (now, or a lease's end), or nothing when `member`
-- is nil (a refusal, a peek), and returns the units the window holds after. A set counted by entries
-- stays so while what it records holds one unit; `by_units` records by units whatever the set (a lease). A
-- window that holds nothing over many entries that slid out (a key hit again after a quiet window) is
-- dropped whole first with UNLINK, which frees a large set in Redis's background thread, so this call's
-- work does not grow with what slid out; its horizon is kept.
local function closeWindow(w, member, count, at, ttl, by_units)
  if not member then return w.held end
  if w.quiet then
    redis.call('UNLINK', w.key)
    w.book, w.mark, w.marks, w.newest, w.quiet = nil, '!' .. w.window_text, {}, 0, false
    w.held, w.live, w.low, w.slid_read = 0, 0, {}, nil
  end
  if w.book or count ~= 1 or by_units then
    if not w.book then countedByUnits().countByUnits(w) end
    units.record(w, member, count, at, ttl)
    return w.held
  end
  local key, recorded = w.key, entryTime(w, at)
  -- The mark this call leaves tells the horizon after it: this window's start, or a later one kept.
  local horizon, mark = now - w.window, w.mark
  if w.horizon ~= nil and w.horizon > horizon then horizon = w.horizon end
  if horizon ~= recorded - w.window then mark = mark .. '@' .. text(horizon) end
  local added = redis.call('ZADD', key, 'NX', recorded, member, 0, mark) - 1  -- less the mark, new or not
  if w.marks[1] ~= mark or #w.marks > 1 then
    local stale = {}
    for _, old in ipairs(w.marks) do
      if old == mark then added = added + 1 else stale[#stale + 1] = old end
    end
    if #stale > 0 then redis.call('ZREM', key, unpack(stale)) end
  else
    added = added + 1
  end
  redis.call('PEXPIRE', key, math.max(ttl, math.ceil((recorded + w.window - now) / 1000)))
  -- Up to TRIM entries that slid out go, the oldest first (after the mark), on one call in TRIM_EVERY:
  -- they no longer count, so removing them is only for memory, and each removal costs Redis a command.
  if now % TRIM_EVERY == 0 then
    local through = text(horizon)
    local slid = redis.call('ZCOUNT', key, '(0', through)
    if slid > TRIM then
      redis.call('ZREMRANGEBYRANK', key, 1, TRIM)
    elseif slid > 0 then
      redis.call('ZREMRANGEBYSCORE', key, '(0', through)
    end
  end
  if added > 0 then w.newest = recorded end
  w.held = w.held + added
  return w.held
end

-- The answer {allowed, remaining, retry_after, reset_after} for a request of `cost` that w's window
-- admitted or not (`allowed`), phase two done. A refused request fits once held + cost - limit units
-- have left: the oldest leave first, each at its entry's time + window. The window is empty once the
-- newest entry holding a unit has left.
local function answerOf(w, allowed, cost, limit)
  local retry_after, reset_after = 0, 0
  if not allowed then
    if w.book then
      retry_after = units.searching().freedAfter(w, w.held + cost - limit)
    else
      -- Counted by entries: the (held - needed + 1)-th newest entry, counted from the newest, so that
      -- entries that slid out but are still there do not matter.
      local rank = cost - limit - 1
      retry_after = tonumber(redis.call('ZRANGE', w.key, rank, rank, 'WITHSCORES')[2]) + w.window - now
    end
  end
  if w.held > 0 then
    if w.book then
      local last_unit = w.book.last_unit
      if last_unit < 0 then last_unit = units.lastUnit(w) end
      reset_after = last_unit + w.window - now
    else
      w.newest = w.newest or newestTime(w.key)
      reset_after = w.newest + w.window - now
    end
    if reset_after < 0 then reset_after = 0 end
  end
  -- remaining is below 0 when counted refusals filled the window past the limit
  return {allowed and 1 or 0, limit - w.held, retry_after, reset_after}
end
)lua";
  /// Every other decision: count, record when admitted (or when refusals count), answer. After kFastPath,
  /// which has read `start` and `live`.
  static constexpr std::string_view kScript = R"lua(
local ttl = tonumber(ARGV[6]) or math.ceil(window / 1000)
local w = openWindow(key, window, ARGV[1], now - window, live, start)
local allowed = w.held + cost <= limit
-- A rejected request writes nothing unless the caller opted into the penalty: recording rejections
-- by default would keep a flooded key full forever, admitting no one.
local member = nil
if record and (allowed or count_rejected) then
  member = ARGV[5]
  if member == nil or member == '' then member = text(math.floor(now / 1000)) end
end
closeWindow(w, member, cost, now, ttl)
return answerOf(w, allowed, cost, limit)
)lua";

  /// Settles a reservation (RedisLimiter::settle) or gives a lease back (RedisLimiter::giveBack), after
  /// the prelude and kFunctions: ARGV[3] is the units the entry now holds, ARGV[5] its member, ARGV[8]
  /// the units it was recorded with. Returns 1 when it settled the entry now, 0 when there was nothing
  /// to settle.
  static constexpr std::string_view kSettleScriptName = "settle";
  /// The settle script's Lua (kSettleScriptName says what it does).
  static constexpr std::string_view kSettleScript = R"lua(
return countedByUnits().changing().settle(key, ARGV[5], tonumber(ARGV[8]), cost, window)
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
if ARGV[11] ~= '' then countedByUnits().changing().settle(key, ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13]), window) end
local start = now - window
local w = openWindow(key, window, ARGV[1], start, redis.call('ZCOUNT', key, '(' .. text(start), TIMES_END))
local ttl = tonumber(ARGV[6])
-- Refused when the cost does not fit, and, under a block (algorithm.hpp's kBlockOpening), always.
if w.held + cost > limit or not record then
  local answer = answerOf(w, w.held + cost <= limit, cost, limit)
  answer[1], answer[5] = 0, 0
  return answer
end
local leased = math.max(cost, math.min(tonumber(ARGV[8]), math.floor((limit - w.held) / tonumber(ARGV[10]))))
local at = now
if leased > cost then at = now + tonumber(ARGV[9]) end
closeWindow(w, ARGV[5], leased, at, ttl, true)
local answer = answerOf(w, true, cost, limit)
answer[5] = leased
return answer
)lua";

  /// Checks one key's log against its entries, for operators and the tests: every sum of the bookkeeping
  /// and of the nodes recomputed from the entries (`swl_scripts check_log`, run with EVAL and the Redis key
  /// as KEYS[1], or SlidingWindowLimiter::check). Its work grows with the set, as it must: never a
  /// decision's. Answers {set kind ('entries' or 'units'), entries, units in the set, nodes of levels 1..4}
  /// or an error naming the first thing that disagrees.
  static constexpr std::string_view kCheckScriptName = "check_log";
  /// The check script's Lua (kCheckScriptName says what it does).
  static constexpr std::string_view kCheckScript = R"lua(
local counted = countedByUnits()
local unitsOf, NODE_BAND = counted.unitsOf, counted.NODE_BAND
local members = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
local function bad(what) return redis.error_reply('swl: the log ' .. key .. ' ' .. what) end
local books, marks, names, times, nodes = {}, {}, {}, {}, {{}, {}, {}, {}}
for i = 1, #members, 2 do
  local member, score = members[i], tonumber(members[i + 1])
  if score < 0 then books[#books + 1] = member
  elseif score == 0 then marks[#marks + 1] = member
  elseif score < 9007199254740992 then names[#names + 1], times[#times + 1] = member, score
  else
    local level = string.byte(member, 2)
    if string.byte(member) ~= 35 or #member ~= 18 or level < 1 or level > 4 then return bad('holds a sum of another layout: ' .. member) end
    local sum, index = struct.unpack('>dd', member, 3)
    if score ~= NODE_BAND[level] + 2 * index then return bad('holds node ' .. index .. ' of level ' .. level .. ' at score ' .. text(score)) end
    nodes[level][index] = sum
  end
end
for i = 2, #times do
  if times[i] <= times[i - 1] then return bad('holds two entries out of time order at ' .. text(times[i])) end
end
if #books == 0 then
  for level = 1, 4 do
    if next(nodes[level]) then return bad('is counted by entries but holds sums') end
  end
  if #marks > 1 then return bad('holds ' .. #marks .. ' marks') end
  if #marks == 1 and string.byte(marks[1]) ~= 33 then return bad('holds ' .. marks[1] .. ' at score 0') end
  for _, member in ipairs(names) do
    if unitsOf(member) ~= 1 then return bad('is counted by entries but holds ' .. member) end
  end
  return {'entries', #names, #names, 0, 0, 0, 0}
end
if #books > 1 then return bad('holds ' .. #books .. ' bookkeeping members') end
if #marks > 0 then return bad('is counted by units but holds a mark') end
local log_sums = counted.sums
local book = log_sums.decode(books[1])
if not book then return bad('holds a bookkeeping member of another layout') end
if book.next - book.oldest ~= #names then
  return bad('holds ' .. #names .. ' entries; its bookkeeping numbers ' .. text(book.oldest) .. '..' .. text(book.next - 1))
end
if #names > 0 and book.newest ~= times[#times] then return bad('says its newest entry is at ' .. text(book.newest) .. ', not ' .. text(times[#times])) end
local units, extra, last_unit = {}, 0, nil
for i, member in ipairs(names) do
  units[i] = unitsOf(member)
  extra = extra + units[i] - 1
  if units[i] > 0 then last_unit = times[i] end
end
if extra ~= book.extra then return bad('holds ' .. text(extra) .. ' extra units; its bookkeeping says ' .. text(book.extra)) end
if last_unit and book.last_unit ~= -1 and book.last_unit ~= last_unit then
  return bad('says its newest unit is at ' .. text(book.last_unit) .. ', not ' .. text(last_unit))
end
local counts = {}
for level = 1, 4 do
  local size = log_sums.SIZE[level]
  local oldest_node, open = math.floor(book.oldest / size), math.floor((book.next - 1) / size)
  -- Each node's sum over the entries still in the set, recomputed.
  local present = {}
  for i = 1, #names do
    local index = math.floor((book.oldest + i - 1) / size)
    present[index] = (present[index] or 0) + units[i] - 1
  end
  counts[level] = 0
  for index, sum in pairs(nodes[level]) do
    counts[level] = counts[level] + 1
    if index < oldest_node or index >= open then return bad('stores node ' .. index .. ' of level ' .. level .. ' outside ' .. oldest_node .. '..' .. (open - 1)) end
  end
  for index = oldest_node, math.max(oldest_node, open) do
    local kept = index == open and book.tail[level] or nodes[level][index] or 0
    if index == oldest_node then kept = kept - book.gone[level] end
    if #names > 0 and kept ~= (present[index] or 0) then
      return bad('node ' .. index .. ' of level ' .. level .. ' sums ' .. text(kept) .. ' over its entries in the set; they hold ' .. text(present[index] or 0))
    end
  end
end
return {'units', #names, #names + extra, counts[1], counts[2], counts[3], counts[4]}
)lua";
};

/// What SlidingWindowLimiter::checkLog found in one key's log, every sum recomputed from its entries.
struct LogCheck {
  /// Whether the set is counted by units (it keeps sums), rather than by entries.
  bool counted_by_units = false;
  /// The entries in the set, those that slid out but are still there included.
  std::int64_t entries = 0;
  /// The units those entries hold.
  std::int64_t units = 0;
  /// The sums the set stores at each level (16, 256, 4,096 and 65,536 entries).
  std::array<std::int64_t, 4> nodes{};
};

namespace detail {

// The check_log script (SlidingWindowLog::kCheckScript), assembled as the log's other scripts are.
inline const Script& logCheckScript() {
  static const std::string text = scriptText<SlidingWindowLog>(SlidingWindowLog::kCheckScript);
  static const Script script(SlidingWindowLog::kCheckScriptName, text);
  return script;
}

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

  // Checks `key`'s log against its entries (the check_log script): every sum of its bookkeeping and its
  // nodes recomputed. Its work grows with the set, so it is for tests and operators, never a request's
  // path. Throws ReplyError naming the first thing that disagrees.
  LogCheck checkLog(std::string_view key) {
    const Reply reply = redis_->run(logCheckScript(), {this->redisKey(key)}, {});
    const ReplyView answer = *reply;
    if (answer.size() != 7 || !answer[0].isString()) throw badReply("something other than a log check");
    LogCheck check;
    check.counted_by_units = answer[0].text() == "units";
    check.entries = answer[1].integer();
    check.units = answer[2].integer();
    for (std::size_t level = 0; level < check.nodes.size(); ++level) check.nodes[level] = answer[3 + level].integer();
    return check;
  }

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
