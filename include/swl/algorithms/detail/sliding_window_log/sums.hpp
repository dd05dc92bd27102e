#pragma once
// The sums that keep every count and search over a set of the log counted by units bounded: a part
// without I/O (SlidingWindowLog::kParts), tested alone in plain Lua 5.1 (tests/lua/test_log_sums.lua).

#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/wire.hpp>

#include <array>
#include <string_view>

namespace swl::detail::sliding_window_log {

// The sums: their notes and logSums' opening, its numbers (wire.hpp), and the rest.
inline constexpr std::string_view kSumsOpening = R"lua(
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
-- entries (more at the top level only past FANOUT x SIZE[LEVELS] entries), and a write changes at most one node
-- per level: nothing grows with the window or with a request's cost.
--
-- The bookkeeping (`book`), one member of the set: BOOKKEEPING and big-endian doubles, in this order:
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
)lua"sv;
inline constexpr auto kSumsConstants = wire::luaSumsConstants();
inline constexpr std::string_view kSumsClosing = R"lua(  local floor = math.floor

  -- A set of `count` entries of one unit each, numbered 0 .. count - 1: one-unit entries need no node.
  local function fresh(count)
    return {extra = 0, oldest = 0, next = count, newest = 0, last_unit = 0, horizon = 0, writes = 0,
            tail = {0, 0, 0, 0}, gone = {0, 0, 0, 0}}
  end

  -- The bookkeeping member's name for `book`, and back; nil for a name of another layout (0.2's or 0.3's).
  local function encode(book)
    local tail, gone = book.tail, book.gone
    return BOOKKEEPING .. pack(FIELDS, book.extra, book.oldest, book.next, book.newest, book.last_unit, book.horizon,
                       book.writes, tail[1], tail[2], tail[3], tail[4], gone[1], gone[2], gone[3], gone[4])
  end
  local function decode(name)
    if #name ~= BOOK_BYTES or string.byte(name) ~= BOOKKEEPING_BYTE then return nil end
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

  return {LEVELS = LEVELS, FANOUT = FANOUT, SIZE = SIZE, fresh = fresh, encode = encode, decode = decode, total = total, add = add,
          change = change, trim = trim}
end

-- The searches over the log's sums, built only for the calls that search: a Lua function costs Redis
-- on every call that defines it. Each reads at most one run of FANOUT nodes per level, from the highest
-- level whose nodes span the range down, then at most FANOUT entries.
local function logSearches(sums)
  local FANOUT, LEVELS, SIZE = sums.FANOUT, sums.LEVELS, sums.SIZE
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
)lua"sv;
inline constexpr std::array<std::string_view, 3> kSums{kSumsOpening, kSumsConstants.view(), kSumsClosing};

}  // namespace swl::detail::sliding_window_log
