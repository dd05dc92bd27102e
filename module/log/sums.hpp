#pragma once
// The log's sums in C++: the same part as the Lua's (include/swl/algorithms/detail/sliding_window_log/
// sums.hpp, which says what each number means), step for step, so that a set counted by units is kept
// alike whichever of the two writes it. A part without I/O: it reads and writes the set only through
// `io`, and tests/test_module_sums.cpp runs it beside the Lua part, inside liblua5.1, on the same
// operations.
//
// Every number is an integer below 2^53, as in the Lua, where each is a double: held here as int64_t,
// they are the same numbers, and quotients are floored as Lua's math.floor floors them.
//
// `io` gives the set's reads and writes, each in entry numbers, as the Lua's does:
//   io.nodes(level, first, last)          the sums of the nodes first..last of `level`, in order (0 for a
//                                         node not stored)
//   io.entries(first, last)               the units of the entries first..last, oldest first
//   io.writeNode(level, index, sum, was)  stores a node (sum 0: removes it); `was` its stored sum, or
//                                         nullopt when none is stored
//   io.dropNodes(level, first, last)      removes the stored nodes first..last of `level`

#include <swl/detail/script/wire.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace swl::native {

using detail::wire::kFanout;  // the nodes read at once by a search at each level
using detail::wire::kLevels;
// The entries a node of each level spans (kFanout ^ level), by level - 1.
inline constexpr std::array<std::int64_t, kLevels> kNodeSize{detail::wire::nodeSize(1), detail::wire::nodeSize(2),
                                                             detail::wire::nodeSize(3), detail::wire::nodeSize(4)};
static_assert(kLevels == 4, "the Lua's sums name each level's tail and gone: four of each");

// a / b rounded down, as Lua's math.floor(a / b) for the integers here (b > 0; a may be -1).
constexpr std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  const std::int64_t quotient = a / b;
  return (a % b != 0 && a < 0) ? quotient - 1 : quotient;
}

// The bookkeeping of a set counted by units (the Lua's `book`).
struct Book {
  std::int64_t extra = 0;
  std::int64_t oldest = 0;
  std::int64_t next = 0;
  std::int64_t newest = 0;
  std::int64_t last_unit = 0;
  std::int64_t horizon = 0;
  std::int64_t writes = 0;
  std::array<std::int64_t, kLevels> tail{};
  std::array<std::int64_t, kLevels> gone{};

  // A set of `count` entries of one unit each, numbered 0 .. count - 1: one-unit entries need no node.
  static Book fresh(std::int64_t count) {
    Book book;
    book.next = count;
    return book;
  }

  // The units of the entries in the set.
  std::int64_t total() const { return next - oldest + extra; }

  bool operator==(const Book& other) const {
    return extra == other.extra && oldest == other.oldest && next == other.next && newest == other.newest &&
           last_unit == other.last_unit && horizon == other.horizon && writes == other.writes && tail == other.tail &&
           gone == other.gone;
  }
};

// Records the entry numbered `next`, of `units`. Each level's open node is closed when the entry starts
// the next one.
template <class Io>
void addEntry(Book& book, Io& io, std::int64_t units) {
  const std::int64_t number = book.next;
  const std::int64_t extra = units - 1;
  for (int level = 0; level < kLevels; ++level) {
    const std::int64_t size = kNodeSize[level];
    if (number % size == 0 && number > 0) {
      // Stored unless it sums to nothing, or every entry of it already left the set.
      if (book.tail[level] != 0 && number > book.oldest) {
        io.writeNode(level + 1, number / size - 1, book.tail[level], std::nullopt);
      }
      book.tail[level] = 0;
    }
    book.tail[level] += extra;
  }
  book.extra += extra;
  book.next = number + 1;
}

// Entry `number` (in the set) now holds `delta` units more (fewer, when below 0).
template <class Io>
void changeEntry(Book& book, Io& io, std::int64_t number, std::int64_t delta) {
  if (delta == 0) return;
  for (int level = 0; level < kLevels; ++level) {
    const std::int64_t index = floorDiv(number, kNodeSize[level]);
    if (index == floorDiv(book.next - 1, kNodeSize[level])) {
      book.tail[level] += delta;
    } else {
      const std::int64_t was = io.nodes(level + 1, index, index)[0];
      io.writeNode(level + 1, index, was + delta, was != 0 ? std::optional<std::int64_t>(was) : std::nullopt);
    }
  }
  book.extra += delta;
}

// The oldest `units.size()` entries leave the set; `units` holds their units, oldest first. Each level's
// oldest node counts what left of it, and nodes left wholly behind go.
template <class Io>
void trimEntries(Book& book, Io& io, const std::vector<std::int64_t>& units) {
  const auto count = static_cast<std::int64_t>(units.size());
  if (count == 0) return;
  const std::int64_t from = book.oldest;
  const std::int64_t to = book.oldest + count;
  std::int64_t left = 0;
  for (const std::int64_t entry_units : units) left += entry_units - 1;
  for (int level = 0; level < kLevels; ++level) {
    const std::int64_t size = kNodeSize[level];
    const std::int64_t was = floorDiv(from, size);
    const std::int64_t is = floorDiv(to, size);
    if (is > was) {
      io.dropNodes(level + 1, was, is - 1);
      std::int64_t gone = 0;
      for (std::int64_t i = is * size - from; i < count; ++i) gone += units[static_cast<std::size_t>(i)] - 1;
      book.gone[level] = gone;
    } else {
      book.gone[level] += left;
    }
  }
  book.extra -= left;
  book.oldest = to;
}

// The searches: each reads at most one run of kFanout nodes per level, from the highest level whose
// nodes span the range down, then at most kFanout entries.
namespace searches {

// The lowest level whose nodes over entries first..last number at most kFanout (those entries share a
// node of the level above); 0 when they share a node of level 1.
inline int spanLevel(std::int64_t first, std::int64_t last) {
  int level = 0;
  while (level < kLevels && floorDiv(first, kNodeSize[level]) != floorDiv(last, kNodeSize[level])) ++level;
  return level;
}

// Where a scan stopped: the node's index, and the units before it and through it.
struct Scanned {
  std::int64_t index = 0;
  std::int64_t before = 0;
  std::int64_t through = 0;
};

// Adds the units in the set of the nodes first..last of `level` (1-based) to `before`, oldest first,
// stopping at the first node that brings the sum to `target`, or at `last`.
template <class Io>
Scanned scan(const Book& book, Io& io, int level, std::int64_t first, std::int64_t last, std::int64_t target,
             std::int64_t before) {
  const std::int64_t size = kNodeSize[level - 1];
  const auto stored = io.nodes(level, first, last);
  const std::int64_t open = floorDiv(book.next - 1, size);
  const std::int64_t oldest_node = floorDiv(book.oldest, size);
  for (std::int64_t index = first; index <= last; ++index) {
    std::int64_t units =
        size + (index == open ? book.tail[level - 1] : stored[static_cast<std::size_t>(index - first)]);
    if (index == oldest_node) units -= (book.oldest - index * size) + book.gone[level - 1];
    if (index == open) units -= (index + 1) * size - book.next;
    if (before + units >= target || index == last) return {index, before, before + units};
    before += units;
  }
  return {last, before, before};  // first > last: nothing to scan
}

// The units of the entries in the set numbered below `number`.
template <class Io>
std::int64_t unitsBefore(const Book& book, Io& io, std::int64_t number) {
  std::int64_t from = book.oldest;
  std::int64_t units = 0;
  if (number <= from) return 0;
  for (int level = spanLevel(from, number - 1); level >= 1; --level) {
    const std::int64_t size = kNodeSize[level - 1];
    const std::int64_t first = floorDiv(from, size);
    const std::int64_t stop = floorDiv(number, size);  // nodes first..stop - 1 lie before
    if (stop > first) {
      units = scan(book, io, level, first, stop - 1, std::numeric_limits<std::int64_t>::max(), units).through;
      from = stop * size;
    }
  }
  for (const std::int64_t entry_units : io.entries(from, number - 1)) units += entry_units;
  return units;
}

// The entry holding the set's `target`-th unit, counted from its oldest entry: its number and the
// units before it; nullopt when the set holds fewer units.
struct EntryOfUnit {
  std::int64_t number = 0;
  std::int64_t before = 0;
};
template <class Io>
std::optional<EntryOfUnit> entryOfUnit(const Book& book, Io& io, std::int64_t target) {
  std::int64_t from = book.oldest;
  std::int64_t last = book.next - 1;
  std::int64_t before = 0;
  for (int level = spanLevel(from, last); level >= 1; --level) {
    const std::int64_t size = kNodeSize[level - 1];
    const Scanned found = scan(book, io, level, floorDiv(from, size), floorDiv(last, size), target, before);
    before = found.before;
    from = std::max(from, found.index * size);
    last = std::min(last, (found.index + 1) * size - 1);
  }
  const auto entries = io.entries(from, last);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (before + entries[i] >= target) return EntryOfUnit{from + static_cast<std::int64_t>(i), before};
    before += entries[i];
  }
  return std::nullopt;
}

}  // namespace searches
}  // namespace swl::native
