#pragma once
// One key's log as swl promises it, held in memory: an exact model its answers are held to, whichever
// side decides (the scripts, in test_log_oracle.cpp; the module's log in the test's own process, in
// test_module_decision.cpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace swl::test {

// Prefix sums over the entries' units that change one entry at a time (a settle) and grow at the end.
class Fenwick {
 public:
  void append(std::int64_t value) {
    const std::size_t i = tree_.size() + 1;  // node i sums entries (i - lowbit(i), i], 1-based
    tree_.push_back(value + prefix(i - 1) - prefix(i - lowbit(i)));
  }
  void add(std::size_t index, std::int64_t delta) {
    for (std::size_t i = index + 1; i <= tree_.size(); i += lowbit(i)) tree_[i - 1] += delta;
  }
  // The units of entries 0 .. count - 1.
  std::int64_t prefix(std::size_t count) const {
    std::int64_t sum = 0;
    for (std::size_t i = count; i > 0; i -= lowbit(i)) sum += tree_[i - 1];
    return sum;
  }
  // The first entry whose prefix, itself included, reaches `target` (1 <= target <= the whole sum).
  std::size_t search(std::int64_t target) const {
    std::size_t position = 0, bit = 1;
    while (bit * 2 <= tree_.size()) bit *= 2;
    for (; bit > 0; bit /= 2) {
      if (position + bit <= tree_.size() && tree_[position + bit - 1] < target) {
        position += bit;
        target -= tree_[position - 1];
      }
    }
    return position;
  }

 private:
  static std::size_t lowbit(std::size_t i) { return i & (~i + 1); }
  std::vector<std::int64_t> tree_;
};

// What a script should answer.
struct Expected {
  bool allowed = true;
  std::int64_t remaining = 0;  // limit - units held after, below 0 when counted refusals overfilled
  std::int64_t retry_after = 0;
  std::int64_t reset_after = 0;
  std::int64_t leased = 0;
};

// How far from the window's ends the entry a wait was read from lay: where the log looks first (the
// first or newest 16 entries) or through its sums, deeper and deeper.
struct Tally {
  std::map<std::string, std::int64_t> counts;
  void add(const std::string& what, std::int64_t by = 1) { counts[what] += by; }
  std::int64_t operator[](const std::string& what) const {
    const auto found = counts.find(what);
    return found == counts.end() ? 0 : found->second;
  }
  std::string text() const {
    std::ostringstream out;
    for (const auto& [what, count] : counts) out << "  " << what << ": " << count << "\n";
    return out.str();
  }
};

// One key's log as swl promises it: every entry recorded, in time order (one at or before the newest is
// recorded 1 us after it), each counting while its time lies after both now - window and the horizon,
// the latest start of the window of a call that recorded an entry (now - window at the call's own now).
class ModelLog {
 public:
  // The index of the window's first entry.
  std::size_t firstIn(std::int64_t now, std::int64_t window) const {
    const std::int64_t start = std::max(now - window, horizon_);
    return static_cast<std::size_t>(std::upper_bound(entries_.begin(), entries_.end(), start,
                                                     [](std::int64_t at, const Entry& e) { return at < e.at; }) -
                                    entries_.begin());
  }
  std::int64_t unitsFrom(std::size_t first) const { return units_.prefix(entries_.size()) - units_.prefix(first); }
  bool horizonBinds(std::int64_t now, std::int64_t window) const { return horizon_ > now - window; }

  // Records `units` at `at` (now, or a lease's end) by a call at `now` with `window`.
  void record(std::int64_t now, std::int64_t at, std::int64_t window, std::int64_t units) {
    const std::int64_t recorded = entries_.empty() ? at : std::max(at, entries_.back().at + 1);
    horizon_ = std::max(horizon_, now - window);
    entries_.push_back({recorded, units, units, false});
    units_.append(units);
  }
  // The newest entry's member, once its receipt names it: only settled entries are looked up.
  void nameNewest(const std::string& member) { index_[member] = entries_.size() - 1; }

  // The answer to a request of `cost` from a window starting at entry `first`, the request recorded or
  // not already.
  Expected answer(std::size_t first, bool allowed, std::int64_t cost, std::int64_t limit, std::int64_t now,
                  std::int64_t window, Tally& tally) const {
    Expected expected;
    const std::int64_t held = unitsFrom(first);
    expected.allowed = allowed;
    expected.remaining = limit - held;
    if (!allowed) {
      const std::int64_t needed = held + cost - limit;
      const std::size_t entry = units_.search(units_.prefix(first) + needed);
      expected.retry_after = entries_[entry].at + window - now;
      const std::size_t from_first = entry - first, from_newest = entries_.size() - 1 - entry;
      const std::size_t depth = std::min(from_first, from_newest);
      tally.add(depth < 16 ? "waits read near an end of the window" : "waits found through the sums");
      for (const std::size_t size : {256, 4096, 65536}) {
        if (depth >= size) tally.add("waits found over " + std::to_string(size) + " entries from either end");
      }
    }
    if (held > 0) {
      std::size_t last = entries_.size() - 1;
      while (entries_[last].units == 0) --last;
      expected.reset_after = entries_[last].at + window - now;
    }
    return expected;
  }

  // Settles `member`'s entry, recorded with `recorded` units, to `actual`: nothing when it was settled
  // before or has left the window.
  bool settle(const std::string& member, std::int64_t recorded, std::int64_t actual, std::int64_t now,
              std::int64_t window, Tally& tally) {
    const auto found = index_.find(member);
    if (found == index_.end()) return false;
    Entry& entry = entries_[found->second];
    if (entry.settled || entry.recorded != recorded || entry.at <= std::max(now - window, horizon_)) return false;
    tally.add(actual == 0 ? "settles to nothing" : actual < entry.units ? "settles to less" : "settles to more");
    units_.add(found->second, actual - entry.units);
    entry.units = actual;
    entry.settled = true;
    return true;
  }

  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::int64_t at;
    std::int64_t units;
    std::int64_t recorded;
    bool settled;
  };
  std::vector<Entry> entries_;
  Fenwick units_;
  std::unordered_map<std::string, std::size_t> index_;
  std::int64_t horizon_ = 0;
};

}  // namespace swl::test
