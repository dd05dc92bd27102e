#pragma once
// The log's decision inside Redis: the Lua's steps (include/swl/algorithms/detail/sliding_window_log/ and
// SlidingWindowLog::kScript) in the same order, on the same set, with the same writes, so that a key
// decided here and by the script in turn holds exactly what the script alone would have left. Where a
// step is the Lua's, its comment is there; what is said here is only what differs in C++.
//
// One thing is left to the script: a set written by swl 0.2 or 0.3 (another layout of bookkeeping). Its
// renumbering is once per set and grows with it; the module answers LAYOUT, writing nothing, and the
// client sends the script instead.

#include "layout.hpp"
#include "sorted_set.hpp"
#include "sums.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::native {

// A decision's arguments: the script's ARGV (swl/detail/script/assembly.hpp's kOneKeyArguments), read.
struct Request {
  std::int64_t window = 0;
  std::string_view window_text;  // as sent: the mark holds it as it came
  std::int64_t limit = 0;
  std::int64_t cost = 1;
  std::int64_t now = 0;
  bool redis_time = true;
  std::string_view member;                   // '' for the millisecond timestamp
  RedisModuleString* member_word = nullptr;  // the client's argument that holds `member`, when it sent one
  std::optional<std::int64_t> ttl;
  bool count_rejected = false;
};

// {allowed, remaining, retry_after_us, reset_after_us}.
struct Answer {
  std::int64_t allowed = 0;
  std::int64_t remaining = 0;
  std::int64_t retry_after = 0;
  std::int64_t reset_after = 0;
};

inline std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return -floorDiv(-a, b); }

class LogDecision {
 public:
  LogDecision(SortedSet& set, const Request& request) : set_(set), request_(request) {}

  // SWL.DECIDE: one key's decision, the script's fast path first.
  Answer decide() {
    const Request& r = request_;
    const bool records = r.cost > 0;  // a cost of 0 peeks
    const std::int64_t start = r.now - r.window;
    const std::int64_t live = liveAfter(start);
    if (r.redis_time) {
      if (std::optional<Answer> answer = fastPath(start, live, records)) return *answer;
    }
    open(start, live);
    // A rejected request writes nothing unless the caller opted into the penalty.
    std::optional<std::string> member;
    if (records && (fits_ || r.count_rejected)) member = memberOrTimestamp();
    record(member);
    return answer();
  }

  // SWL.DECIDEALL takes a rule's decision in the multi script's three steps: every rule's window is
  // opened before any rule records, then each records the request (`member`) or nothing, then answers.
  // Phase one: whether this rule has room for its cost.
  bool open() {
    const std::int64_t start = request_.now - request_.window;
    open(start, liveAfter(start));
    return fits_;
  }
  // Phase two: `member` recorded at this rule's cost, or nothing.
  void record(const std::optional<std::string>& member) {
    closeWindow(*window_, member, request_.cost, request_.now, ttl(), false);
    recorded_ = member.has_value();
  }
  // {allowed by this rule, remaining, retry_after_us, reset_after_us}.
  Answer answer() { return answerOf(*window_, fits_, request_.cost, request_.limit, recorded_); }

  // The member a request is recorded under: the caller's, or its millisecond timestamp.
  std::string memberOrTimestamp() const {
    if (!request_.member.empty()) return std::string(request_.member);
    return integerText(floorDiv(request_.now, 1000));
  }

 private:
  // One key's window as this call finds it (the Lua's `w`).
  struct Window {
    std::int64_t window = 0;
    std::int64_t start = 0;
    std::int64_t live = 0;
    std::int64_t held = 0;
    bool quiet = false;
    std::optional<Book> book;
    std::optional<std::int64_t> horizon;
    // counted by entries
    std::string mark;
    std::vector<std::string> marks;
    std::vector<std::string> low;
    std::optional<std::int64_t> newest;
    // counted by units
    std::vector<std::int64_t> slid_read;
    std::int64_t slid = 0;
    std::int64_t slid_units = 0;
    std::optional<std::int64_t> replaced;
    std::vector<std::pair<std::int64_t, std::string>> writes;
    std::vector<std::string> removals;
    std::vector<std::pair<std::int64_t, std::int64_t>> dropped;
    std::vector<std::string> read;  // the entries the last search read, from number `read_from`
    std::int64_t read_from = 0;

    // Where the window's entries start among the set's ranks: the bookkeeping member, then the `slid`
    // entries at or before `start`. Entries near the window's start are walked to from there, where
    // their ranks deep in a large set would take a ZRANGE.
    SortedSet::RankHint windowStart() const { return {static_cast<double>(start), 1 + slid}; }
  };

  // The sums' `io` over a window of a set counted by units (the Lua's Window methods).
  class SumsIo {
   public:
    SumsIo(SortedSet& set, Window& w) : set_(set), w_(w) {}
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
    SortedSet& set_;
    Window& w_;
  };

  void open(std::int64_t start, std::int64_t live) {
    window_ = openWindow(start, live);
    fits_ = window_->held + request_.cost <= request_.limit;
  }

  std::int64_t ttl() const { return request_.ttl ? *request_.ttl : ceilDiv(request_.window, 1000); }

  // Redis's clock in milliseconds when the call decides on it (read once, as it began); none otherwise.
  std::optional<std::int64_t> redisMilliseconds() const {
    if (!request_.redis_time) return std::nullopt;
    return floorDiv(request_.now, 1000);
  }

  // The entries after `start`: the Lua's ZCOUNT key (start (2^53).
  std::int64_t liveAfter(std::int64_t start) const {
    return set_.countAfter(start, [this]() -> std::optional<std::int64_t> {
      const std::vector<Scored> lowest = set_.lowest({}, 1);
      if (lowest.empty()) return std::nullopt;
      const std::optional<Book> book = bookkeepingOf(lowest[0].member);
      if (!book) return std::nullopt;
      return book->next - book->oldest;
    });
  }

  static ScoreRange after(std::int64_t start) {
    return {static_cast<double>(start), static_cast<double>(kTimesEnd), true, true};
  }

  std::int64_t newestTime() const {
    const std::vector<Scored> newest = set_.highest({0, static_cast<double>(kTimesEnd), true, true}, 1);
    return newest.empty() ? 0 : static_cast<std::int64_t>(newest[0].score);
  }

  std::int64_t scoreAtRank(std::int64_t rank) const {
    const std::vector<Scored> found = set_.byRank(rank, rank);
    if (found.empty()) throw CommandError("ERR swl: the log " + set_.name() + " holds fewer entries than it counts");
    return static_cast<std::int64_t>(found[0].score);
  }

  // The fast path (SlidingWindowLog::kFastPath), on Redis's clock. Its ZADD of the entry and the mark is
  // taken back at once when the set turns out not to be counted by entries under this window.
  std::optional<Answer> fastPath(std::int64_t start, std::int64_t live, bool record) {
    const Request& r = request_;
    const std::string mark = "!" + std::string(r.window_text);
    // Only a member of the caller's (the script's note: a timestamp repeats).
    if (r.cost == 1 && record && live < r.limit && !r.member.empty()) {
      const std::string_view member = r.member;
      bool is_new[2] = {false, false};
      const std::pair<std::int64_t, Word> entry_and_mark[] = {{r.now, {member, r.member_word}},
                                                              {0, {mark, kept_marks.of(mark)}}};
      const std::int64_t added = set_.add(entry_and_mark, REDISMODULE_ZADD_NX, is_new);
      if (is_new[0] && is_new[1] && set_.countUpTo({REDISMODULE_NEGATIVE_INFINITE, 0, false, false}, 1) > 1) {
        set_.remove({mark, member});
        return std::nullopt;
      }
      set_.expireIn(ttl(), redisMilliseconds());
      if (r.now % kTrimEvery == 0) trimSlid(start);
      return Answer{1, r.limit - live - (added > 0 ? 1 : 0), 0, r.window};
    }
    if ((r.cost == 0 || (live + r.cost > r.limit && !r.count_rejected)) && set_.score(mark)) {
      Answer answer{1, r.limit - live, 0, 0};
      if (live > 0) answer.reset_after = scoreAtRank(-1) + r.window - r.now;
      if (r.cost > 0) {
        answer.allowed = 0;
        answer.retry_after = oldestToLeave(live, r.cost, r.limit, start, true) + r.window - r.now;
      }
      return answer;
    }
    return std::nullopt;
  }

  // Counted by entries: the time of the (limit - cost + 1)-th newest entry, the one whose leaving lets
  // the same cost in (the Lua's ZRANGE rank rank, rank = cost - limit - 1). Counted from the window's
  // start when that is nearer and the same entry: when the `held` entries are the ones after `start`
  // (nothing was recorded, which on a clock stepped back may lie before it), it is the
  // (held + cost - limit)-th of them.
  std::int64_t oldestToLeave(std::int64_t held, std::int64_t cost, std::int64_t limit, std::int64_t start,
                             bool held_lie_after_start) const {
    const std::int64_t from_start = held + cost - limit;
    if (held_lie_after_start && from_start >= 1 && from_start <= kWalk && from_start <= limit - cost + 1) {
      if (const std::optional<Scored> leaving = set_.lowestAt(after(start), from_start - 1)) {
        return static_cast<std::int64_t>(leaving->score);
      }
    }
    return scoreAtRank(cost - limit - 1);
  }

  // Up to kTrim entries that slid out (through `through`) go, the oldest first (after the mark).
  void trimSlid(std::int64_t through) {
    const ScoreRange slid{0, static_cast<double>(through), true, false};
    const std::int64_t count = set_.countUpTo(slid, kTrim);
    if (count > kTrim) {
      set_.removeByRank(1, kTrim);
    } else if (count > 0) {
      set_.removeByScore(slid);
    }
  }

  // Phase one (openWindow).
  Window openWindow(std::int64_t start, std::int64_t live) {
    const Request& r = request_;
    Window w;
    w.window = r.window;
    w.start = start;
    w.live = live;
    w.held = live;
    std::vector<Scored> low = set_.lowest({REDISMODULE_NEGATIVE_INFINITE, static_cast<double>(start), false, false},
                                          static_cast<std::int64_t>(kLow));
    w.quiet = live == 0 && low.size() == kLow;
    if (!low.empty() && !low[0].member.empty() && low[0].member[0] == kBookkeepingByte) {
      const std::optional<Book> book = bookkeepingOf(low[0].member);
      if (!book) {
        throw CommandError("LAYOUT swl: the log " + set_.name() +
                           " holds a set of swl 0.2 or 0.3, which the script renumbers once");
      }
      openUnits(w, *book, low);
      return w;
    }
    w.mark = "!" + std::string(r.window_text);
    for (Scored& found : low) {
      if (!found.member.empty() && found.member[0] == kMarkByte && w.low.empty()) {
        w.marks.push_back(std::move(found.member));
      } else {
        w.low.push_back(std::move(found.member));
      }
    }
    if (!w.marks.empty() && w.marks[0] != w.mark) {
      const MarkRead read = readMark(w.marks[0]);
      if (read.horizon) {
        w.horizon = read.horizon;
      } else if (read.window) {
        w.newest = newestTime();
        if (*w.newest > 0) w.horizon = *w.newest - *read.window;
      }
    } else if (!w.marks.empty() && !r.redis_time) {
      w.newest = newestTime();
      w.horizon = *w.newest - r.window;
    }
    if (w.horizon && *w.horizon > start) {
      w.start = *w.horizon;
      w.live = liveAfter(*w.horizon);
    }
    w.held = w.live;
    return w;
  }

  // A mark's window and horizon: the Lua's string.match(mark, '^!(%d+)@?(%d*)$').
  struct MarkRead {
    std::optional<std::int64_t> window;
    std::optional<std::int64_t> horizon;
  };
  static MarkRead readMark(std::string_view mark) {
    std::size_t at = 1;
    const auto digits = [&mark, &at] {
      const std::size_t from = at;
      while (at < mark.size() && mark[at] >= '0' && mark[at] <= '9') ++at;
      return mark.substr(from, at - from);
    };
    const std::string_view window = digits();
    if (window.empty()) return {};
    if (at < mark.size() && mark[at] == '@') ++at;
    const std::string_view horizon = digits();
    if (at != mark.size()) return {};
    MarkRead read;
    read.window = static_cast<std::int64_t>(std::stod(std::string(window)));
    if (!horizon.empty()) read.horizon = static_cast<std::int64_t>(std::stod(std::string(horizon)));
    return read;
  }

  // Phase one for a set counted by units (units.open).
  void openUnits(Window& w, const Book& book, const std::vector<Scored>& low) {
    w.book = book;
    w.horizon = book.horizon;
    std::size_t from = 1;
    // A mark beside a bookkeeping member goes before any rank is read.
    while (from < low.size() && !low[from].member.empty() && low[from].member[0] == kMarkByte) {
      set_.remove({low[from].member});
      ++from;
    }
    if (book.horizon > w.start) {
      w.start = book.horizon;
      w.live = liveAfter(book.horizon);
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

  // The time to record an entry at (entryTime).
  std::int64_t entryTime(const Window& w, std::int64_t at) const {
    if (request_.redis_time && at == request_.now && !w.book) return at;
    const std::int64_t newest = w.book ? w.book->newest : (w.newest ? *w.newest : newestTime());
    return newest >= at ? newest + 1 : at;
  }

  // Phase two (closeWindow).
  void closeWindow(Window& w, const std::optional<std::string>& member, std::int64_t count, std::int64_t at,
                   std::int64_t ttl, bool by_units) {
    const Request& r = request_;
    if (!member) return;
    if (w.quiet) {
      set_.unlink();
      w.book.reset();
      w.mark = "!" + std::string(r.window_text);
      w.marks.clear();
      w.newest = 0;
      w.quiet = false;
      w.held = 0;
      w.live = 0;
      w.low.clear();
      w.slid_read.clear();
    }
    if (w.book || count != 1 || by_units) {
      if (!w.book) countByUnits(w);
      recordUnits(w, *member, count, at, ttl);
      return;
    }
    const std::int64_t recorded = entryTime(w, at);
    // The mark this call leaves tells the horizon after it.
    std::int64_t horizon = r.now - w.window;
    std::string mark = w.mark;
    if (w.horizon && *w.horizon > horizon) horizon = *w.horizon;
    if (horizon != recorded - w.window) mark += "@" + integerText(horizon);
    std::int64_t added = set_.add({{recorded, *member}, {0, mark}}, REDISMODULE_ZADD_NX) - 1;
    if (w.marks.empty() || w.marks[0] != mark || w.marks.size() > 1) {
      std::vector<std::string> stale;
      for (const std::string& old : w.marks) {
        if (old == mark) {
          ++added;
        } else {
          stale.push_back(old);
        }
      }
      set_.remove(stale);
    } else {
      ++added;
    }
    set_.expireIn(std::max(ttl, ceilDiv(recorded + w.window - r.now, 1000)), redisMilliseconds());
    if (r.now % kTrimEvery == 0) trimSlid(horizon);
    if (added > 0) w.newest = recorded;
    w.held += added;
  }

  // A set counted by entries turned into one counted by units (countByUnits).
  void countByUnits(Window& w) {
    const std::int64_t entries = set_.count({0, static_cast<double>(kTimesEnd), true, true});
    Book book = Book::fresh(entries);
    if (!w.newest) w.newest = newestTime();
    book.newest = *w.newest;
    book.last_unit = *w.newest;
    book.horizon = w.horizon ? *w.horizon : 0;
    w.book = book;
    w.replaced = static_cast<std::int64_t>(w.marks.size());
    w.slid = entries - w.live;
    w.slid_units = w.slid;
    w.slid_read.assign(w.low.size(), 1);
  }

  // Records `count` units for `member` (units.record).
  void recordUnits(Window& w, const std::string& member, std::int64_t count, std::int64_t at, std::int64_t ttl) {
    const Request& r = request_;
    Book& book = *w.book;
    std::vector<std::int64_t> trimmed = w.slid_read;
    if (static_cast<std::int64_t>(trimmed.size()) > w.slid || static_cast<std::int64_t>(trimmed.size()) > kUnitsTrim) {
      trimmed.resize(static_cast<std::size_t>(std::max<std::int64_t>(0, std::min(w.slid, kUnitsTrim))));
    }
    for (const std::int64_t units : trimmed) w.slid_units -= units;
    SumsIo io(set_, w);
    trimEntries(book, io, trimmed);
    w.slid -= static_cast<std::int64_t>(trimmed.size());
    const std::int64_t recorded = entryTime(w, at);
    addEntry(book, io, count);
    if (r.now - w.window > book.horizon) book.horizon = r.now - w.window;
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
    if (set_.add(writes, REDISMODULE_ZADD_LT) == pairs - 1) {
      set_.add({{recorded, named + ")" + integerText(book.next - 1)}}, 0);
    }
    // The old bookkeeping member (or the marks) sorts after the new one, then the entries that left.
    set_.removeByRank(1, static_cast<std::int64_t>(trimmed.size()) + (w.replaced ? *w.replaced : 1));
    set_.remove(w.removals);
    for (const auto& [first, last] : w.dropped) {
      set_.removeByScore({static_cast<double>(first), static_cast<double>(last), false, false});
    }
    set_.expireIn(std::max(ttl, ceilDiv(recorded + w.window - r.now, 1000)), redisMilliseconds());
    w.held += count;
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

  // The time until `needed` more units have left the window, after phase two (units.freedAfter).
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

  // The answer (answerOf); `recorded` says whether phase two recorded an entry.
  Answer answerOf(Window& w, bool allowed, std::int64_t cost, std::int64_t limit, bool recorded) {
    Answer answer{allowed ? 1 : 0, limit - w.held, 0, 0};
    if (!allowed) {
      if (w.book) {
        answer.retry_after = freedAfter(w, w.held + cost - limit);
      } else {
        answer.retry_after = oldestToLeave(w.held, cost, limit, w.start, !recorded) + w.window - request_.now;
      }
    }
    if (w.held > 0) {
      if (w.book) {
        answer.reset_after = lastUnit(w) + w.window - request_.now;
      } else {
        if (!w.newest) w.newest = newestTime();
        answer.reset_after = *w.newest + w.window - request_.now;
      }
      if (answer.reset_after < 0) answer.reset_after = 0;
    }
    return answer;
  }

  SortedSet& set_;
  const Request& request_;
  std::optional<Window> window_;  // after phase one
  bool fits_ = false;             // whether the window had room for the cost when opened
  bool recorded_ = false;         // whether phase two recorded an entry
};

}  // namespace swl::native
