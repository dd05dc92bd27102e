#pragma once
// The steps only a set counted by units takes (the Lua's countedByUnits, counted_by_units.hpp): its window
// opened from its bookkeeping, a record with its sums kept, and the waits found through them. Over a Set
// (module/log/set.hpp), as the Lua's over redis.call.

#include "layout.hpp"
#include "reads.hpp"
#include "request.hpp"
#include "set.hpp"
#include "sums.hpp"
#include "window.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace swl::native {

template <class Set>
class CountedByUnits : protected LogReads<Set> {
 protected:
  using LogReads<Set>::LogReads;
  using LogReads<Set>::set_;
  using LogReads<Set>::request_;

  // The sums' `io` over a window of a set counted by units (the Lua's Window methods).
  class SumsIo {
   public:
    SumsIo(Set& set, Window& w) : set_(set), w_(w) {}
    std::vector<std::int64_t> nodes(int level, std::int64_t first, std::int64_t last) {
      const std::vector<Scored> names = set_.lowest(
          {static_cast<double>(nodeScore(level, first)), static_cast<double>(nodeScore(level, last)), false, false},
          -1);
      std::vector<std::int64_t> found(static_cast<std::size_t>(last - first + 1), 0);
      for (const Scored& name : names) {
        const NodeRead node = nodeOf(name.member);
        found[static_cast<std::size_t>(node.index - first)] = node.sum;
      }
      return found;
    }
    std::vector<std::int64_t> entries(std::int64_t first, std::int64_t last) {
      const std::int64_t base = w_.book->oldest - 1;
      std::vector<std::int64_t> found;
      w_.read.clear();
      for (std::string& entry : set_.membersByRank(first - base, last - base, w_.windowStart())) {
        found.push_back(unitsOf(entry));
        w_.read.push_back(std::move(entry));
      }
      w_.read_from = first;
      return found;
    }
    void writeNode(int level, std::int64_t index, std::int64_t sum, std::optional<std::int64_t> was) {
      if (was) w_.removals.push_back(nodeName(level, *was, index));
      if (sum != 0) w_.writes.emplace_back(nodeScore(level, index), nodeName(level, sum, index));
    }
    void dropNodes(int level, std::int64_t first, std::int64_t last) {
      w_.dropped.emplace_back(nodeScore(level, first), nodeScore(level, last));
    }

   private:
    Set& set_;
    Window& w_;
  };

  // Phase one for a set counted by units (units.open), whose bookkeeping `book` was the first of `low`.
  void openUnits(Window& w, const Book& book, const std::vector<Scored>& low) {
    w.book = book;
    w.horizon = book.horizon;
    std::size_t from = 1;
    // A mark beside a bookkeeping member goes before any rank is read.
    while (from < low.size() && !low[from].member.empty() && low[from].member[0] == kMarkByte) {
      set_.remove(std::vector<std::string>{low[from].member});
      ++from;
    }
    if (book.horizon > w.start) {
      w.start = book.horizon;
      w.live = this->liveAfter(book.horizon);
    }
    for (std::size_t i = from; i < low.size(); ++i) w.slid_read.push_back(unitsOf(low[i].member));
    w.slid = book.next - book.oldest - w.live;
    if (w.live == 0) {
      w.slid_units = book.total();
    } else if (w.slid == static_cast<std::int64_t>(w.slid_read.size())) {
      w.slid_units = 0;
      for (const std::int64_t units : w.slid_read) w.slid_units += units;
    } else {
      SumsIo io(set_, w);
      w.slid_units = searches::unitsBefore(*w.book, io, book.oldest + w.slid);
    }
    w.held = book.total() - w.slid_units;
  }

  // A set counted by entries turned into one counted by units (countByUnits).
  void countByUnits(Window& w) {
    const std::int64_t entries = set_.count({0, static_cast<double>(kTimesEnd), true, true});
    Book book = Book::fresh(entries);
    if (!w.newest) w.newest = this->newestTime();
    book.newest = *w.newest;
    book.last_unit = *w.newest;
    book.horizon = w.horizon ? *w.horizon : 0;
    w.book = book;
    w.replaced = static_cast<std::int64_t>(w.marks.size());
    w.slid = entries - w.live;
    w.slid_units = w.slid;
    w.slid_read.assign(w.low.size(), 1);
  }

  // Records `count` units for `member` (units.record), and trims up to kUnitsTrim entries that slid out.
  void recordUnits(Window& w, const std::string& member, std::int64_t count, std::int64_t at, std::int64_t ttl) {
    Book& book = *w.book;
    const std::vector<std::int64_t> trimmed = trimmedUnits(w);
    SumsIo io(set_, w);
    trimEntries(book, io, trimmed);
    w.slid -= static_cast<std::int64_t>(trimmed.size());
    const std::int64_t recorded = this->entryTime(w, at);
    addEntry(book, io, count);
    if (request_.now - w.window > book.horizon) book.horizon = request_.now - w.window;
    book.newest = recorded;
    if (count > 0) book.last_unit = recorded;
    book.writes += 1;
    std::vector<std::pair<std::int64_t, std::string>> writes;
    writes.reserve(w.writes.size() + 2);
    const std::string named = unitsEntryName(count, member);
    writes.emplace_back(recorded, named);
    for (auto& write : w.writes) writes.push_back(std::move(write));
    w.writes.clear();
    writes.emplace_back(-1 - book.writes, bookkeepingName(book));
    const auto pairs = static_cast<std::int64_t>(writes.size());
    if (set_.add(writes, AddMode::only_lower, nullptr) == pairs - 1) {
      const std::string repeated = repeatedEntryName(named, book.next - 1);
      set_.add(ScoredNames{{recorded, repeated}}, AddMode::any, nullptr);
    }
    // The old bookkeeping member (or the marks) sorts after the new one, then the entries that left.
    set_.removeByRank(1, static_cast<std::int64_t>(trimmed.size()) + (w.replaced ? *w.replaced : 1));
    set_.remove(w.removals);
    for (const auto& [first, last] : w.dropped) {
      set_.removeByScore({static_cast<double>(first), static_cast<double>(last), false, false});
    }
    set_.expireIn(std::max(ttl, ceilDiv(recorded + w.window - request_.now, 1000)), this->redisMilliseconds());
    w.held += count;
  }

  // The units of the entries that slid out and go now, at most kUnitsTrim, taken off w.slid_units.
  static std::vector<std::int64_t> trimmedUnits(Window& w) {
    std::vector<std::int64_t> trimmed = w.slid_read;
    if (static_cast<std::int64_t>(trimmed.size()) > w.slid || static_cast<std::int64_t>(trimmed.size()) > kUnitsTrim) {
      trimmed.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, std::min(w.slid, kUnitsTrim))));
    }
    for (const std::int64_t units : trimmed) w.slid_units -= units;
    return trimmed;
  }

  // The time of the newest entry that holds a unit (units.lastUnit).
  std::int64_t lastUnit(Window& w) {
    Book& book = *w.book;
    if (book.last_unit < 0) {
      SumsIo io(set_, w);
      const auto found = searches::entryOfUnit(book, io, book.total());
      if (!found) throw CommandError("ERR swl: the log " + set_.name() + " holds fewer units than its sums say");
      const std::optional<double> score = set_.score(w.read[static_cast<std::size_t>(found->number - w.read_from)]);
      book.last_unit = static_cast<std::int64_t>(score.value_or(0));
    }
    return book.last_unit;
  }

  // The first of `members` whose units, added in turn to `before`, bring the sum to `target`.
  static std::optional<Scored> memberReaching(std::vector<Scored>& members, std::int64_t target, std::int64_t before) {
    for (Scored& found : members) {
      before += unitsOf(found.member);
      if (before >= target) return std::move(found);
    }
    return std::nullopt;
  }

  // The time until `needed` more units have left the window, after phase two (units.freedAfter): among
  // the window's first kNear entries, or the set's newest kNear, or through the sums.
  std::int64_t freedAfter(Window& w, std::int64_t needed) {
    const Book& book = *w.book;
    const std::int64_t entries = book.next - book.oldest;
    std::optional<Scored> entry;
    if (needed <= kNear) {
      const std::int64_t first = w.slid + 1;
      std::vector<Scored> near = set_.byRank(first, std::min(first + kNear - 1, entries), w.windowStart());
      entry = memberReaching(near, needed, 0);
    }
    const std::int64_t target = w.slid_units + needed;
    const std::int64_t staying = book.total() - target;
    if (!entry && staying < kNear) {
      std::vector<Scored> newest =
          set_.highest({0, static_cast<double>(kTimesEnd), true, true}, std::min(kNear, entries));
      entry = memberReaching(newest, staying + 1, 0);
    }
    if (!entry) {
      SumsIo io(set_, w);
      const auto found = searches::entryOfUnit(book, io, target);
      if (!found) throw CommandError("ERR swl: the log " + set_.name() + " holds fewer units than its sums say");
      const std::string& member = w.read[static_cast<std::size_t>(found->number - w.read_from)];
      entry = Scored{member, set_.score(member).value_or(0)};
    }
    return static_cast<std::int64_t>(entry->score) + w.window - request_.now;
  }
};

}  // namespace swl::native
