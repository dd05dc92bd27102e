#pragma once
// The log's steps, first half: reading and writing a set counted by units, the `io` of its sums
// (SlidingWindowLog::kFunctions is this, then phases.hpp).

#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/wire.hpp>

#include <array>
#include <string_view>

namespace swl::detail::sliding_window_log {

// How a set counted by units is read and written, and the helpers every step shares. Only a set counted
// by units builds countedByUnits (a Lua function costs Redis on every call that defines it). Its text is
// cut where the numbers of the wire format (wire.hpp) go in: the nodes' bands, and NEAR.
inline constexpr std::string_view kCountedByUnitsOpening = R"lua(
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
  -- The scores of each level's nodes (even numbers), from these on
)lua"sv;
inline constexpr auto kNodeBands = wire::luaNodeBands();
inline constexpr std::string_view kCountedByUnitsMiddle = R"lua(
  -- An entry's units: UNITS or SETTLED and a double, then the member; 0.2's 'member*units' and
  -- 'member=units'; otherwise one.
  local function unitsOf(member)
    local mark = string.byte(member)
    if mark == UNITS_BYTE or mark == SETTLED_BYTE then return (struct.unpack('>d', member, 2)) end
    local at = string.find(member, OLD_UNITS)
    return at and tonumber(string.sub(member, at + 1)) or 1
  end

  -- A node's member: BOOKKEEPING, its level, its sum and its index (two big-endian doubles). The sum is
  -- in the name so that a run of nodes is one read of names (Redis formats every score it returns); the
  -- level keeps names of equal sums and indexes on different levels apart.
  local function nodeName(level, sum, index) return BOOKKEEPING .. string.char(level) .. struct.pack('>dd', sum, index) end

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
    while low[from] ~= nil and string.byte(low[from]) == MARK_BYTE do
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
    local named = UNITS .. struct.pack('>d', count) .. member
    if redis.call('ZADD', key, 'LT', recorded, named, unpack(writes)) == #writes / 2 then
      redis.call('ZADD', key, recorded, named .. REPEAT .. text(book.next - 1))
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
)lua"sv;
inline constexpr auto kNear = wire::luaNear();
inline constexpr std::string_view kCountedByUnitsClosing = R"lua(    units.searches = logSearches(log_sums)

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
        found[i] = (mark == UNITS_BYTE or mark == SETTLED_BYTE) and unpack('>d', member, 2) or unitsOf(member)
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

    -- Numbers the entries of a set written by swl 0.2 or 0.3 (BOOKKEEPING alone, or a bookkeeping member of
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
    -- time. A settled entry is marked (SETTLED instead of UNITS), so settling it again finds nothing; an entry
    -- that has left the window, or a key that expired, is left alone: its units no longer count.
    -- Returns 1 when it settled the entry.
    function units.settle(key, member, recorded, actual, window)
      -- Recorded as counted by units, or, for one unit, as counted by entries.
      local recorded_member = UNITS .. struct.pack('>d', recorded) .. member
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
      local settled = SETTLED .. struct.pack('>d', actual) .. member
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
)lua"sv;
inline constexpr std::array<std::string_view, 5> kCountedByUnits{
    kCountedByUnitsOpening, kNodeBands.view(), kCountedByUnitsMiddle, kNear.view(), kCountedByUnitsClosing};

}  // namespace swl::detail::sliding_window_log
