#pragma once
// The log's decision: the Lua's steps (swl/algorithms/detail/sliding_window_log/ and
// SlidingWindowLog::kScript) in the same order, on the same set, with the same writes, so that a key
// decided here and by the script in turn holds exactly what the script alone would have left. Where a
// step is the Lua's, its comment is there; what is said here is only what differs in C++. Over a Set
// (module/log/set.hpp): Redis's, through the module API, or the tests' own in memory.
//
// One thing is left to the script: a set written by swl 0.2 or 0.3 (another layout of bookkeeping). Its
// renumbering is once per set and grows with it; the module answers LAYOUT, writing nothing, and the
// client sends the script instead.

#include "layout.hpp"
#include "request.hpp"
#include "set.hpp"
#include "units.hpp"
#include "window.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::native {

template <class Set>
class LogDecision : CountedByUnits<Set> {
  using Base = CountedByUnits<Set>;
  using Base::request_;
  using Base::set_;

 public:
  LogDecision(Set& set, const Request& request) : Base(set, request) {}

  // SWL.DECIDE: one key's decision, the script's fast path first.
  Answer decide() {
    const Request& r = request_;
    const bool records = r.cost > 0;  // a cost of 0 peeks
    const std::int64_t start = r.now - r.window;
    const std::int64_t live = this->liveAfter(start);
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
    open(start, this->liveAfter(start));
    return fits_;
  }
  // Phase two: `member` recorded at this rule's cost, or nothing.
  void record(const std::optional<std::string>& member) {
    closeWindow(*window_, member, request_.cost, request_.now, this->ttl(), false);
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
  void open(std::int64_t start, std::int64_t live) {
    window_ = openWindow(start, live);
    fits_ = window_->held + request_.cost <= request_.limit;
  }

  // The fast path (SlidingWindowLog::kFastPath), on Redis's clock. Its ZADD of the entry and the mark is
  // taken back at once when the set turns out not to be counted by entries under this window.
  std::optional<Answer> fastPath(std::int64_t start, std::int64_t live, bool record) {
    const Request& r = request_;
    const std::string mark = markOf(r.window_text);
    // Only a member of the caller's (the script's note: a timestamp repeats).
    if (r.cost == 1 && record && live < r.limit && !r.member.empty()) {
      bool is_new[2] = {false, false};
      const std::int64_t added = set_.add(ScoredNames{{r.now, r.member}, {0, mark}}, AddMode::only_new, is_new);
      const double inf = std::numeric_limits<double>::infinity();
      if (is_new[0] && is_new[1] && set_.countUpTo({-inf, 0, false, false}, 1) > 1) {
        set_.remove(std::vector<std::string_view>{mark, r.member});
        return std::nullopt;
      }
      set_.expireIn(this->ttl(), this->redisMilliseconds());
      if (r.now % kTrimEvery == 0) trimSlid(start);
      return Answer{1, r.limit - live - (added > 0 ? 1 : 0), 0, r.window};
    }
    if ((r.cost == 0 || (live + r.cost > r.limit && !r.count_rejected)) && set_.score(mark)) {
      Answer answer{1, r.limit - live, 0, 0};
      if (live > 0) answer.reset_after = this->scoreAtRank(-1) + r.window - r.now;
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
      if (const std::optional<Scored> leaving = set_.lowestAt(this->after(start), from_start - 1)) {
        return static_cast<std::int64_t>(leaving->score);
      }
    }
    return this->scoreAtRank(cost - limit - 1);
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
    Window w;
    w.window = request_.window;
    w.start = start;
    w.live = live;
    w.held = live;
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<Scored> low = set_.lowest({-inf, static_cast<double>(start), false, false}, kLow);
    w.quiet = live == 0 && static_cast<std::int64_t>(low.size()) == kLow;
    if (!low.empty() && !low[0].member.empty() && low[0].member[0] == kBookkeepingByte) {
      const std::optional<Book> book = bookkeepingOf(low[0].member);
      if (!book) {
        throw CommandError(std::string(wire::kLayoutError) + " swl: the log " + set_.name() +
                           " holds a set of swl 0.2 or 0.3, which the script renumbers once");
      }
      this->openUnits(w, *book, low);
      return w;
    }
    w.mark = markOf(request_.window_text);
    for (Scored& found : low) {
      if (!found.member.empty() && found.member[0] == kMarkByte && w.low.empty()) {
        w.marks.push_back(std::move(found.member));
      } else {
        w.low.push_back(std::move(found.member));
      }
    }
    readHorizon(w);
    if (w.horizon && *w.horizon > start) {
      w.start = *w.horizon;
      w.live = this->liveAfter(*w.horizon);
    }
    w.held = w.live;
    return w;
  }

  // A set counted by entries' horizon, from its mark (the Lua's openWindow, after the marks are read).
  void readHorizon(Window& w) const {
    if (!w.marks.empty() && w.marks[0] != w.mark) {
      const MarkRead read = readMark(w.marks[0]);
      if (read.horizon) {
        w.horizon = read.horizon;
      } else if (read.window) {
        w.newest = this->newestTime();
        if (*w.newest > 0) w.horizon = *w.newest - *read.window;
      }
    } else if (!w.marks.empty() && !request_.redis_time) {
      w.newest = this->newestTime();
      w.horizon = *w.newest - request_.window;
    }
  }

  // Phase two (closeWindow).
  void closeWindow(Window& w, const std::optional<std::string>& member, std::int64_t count, std::int64_t at,
                   std::int64_t ttl, bool by_units) {
    if (!member) return;
    if (w.quiet) {
      set_.unlink();
      w.book.reset();
      w.mark = markOf(request_.window_text);
      w.marks.clear();
      w.newest = 0;
      w.quiet = false;
      w.held = 0;
      w.live = 0;
      w.low.clear();
      w.slid_read.clear();
    }
    if (w.book || count != 1 || by_units) {
      if (!w.book) this->countByUnits(w);
      this->recordUnits(w, *member, count, at, ttl);
      return;
    }
    recordEntry(w, *member, at, ttl);
  }

  // Phase two for a set counted by entries: the entry and the mark this call leaves, which tells the
  // horizon after it.
  void recordEntry(Window& w, const std::string& member, std::int64_t at, std::int64_t ttl) {
    const std::int64_t recorded = this->entryTime(w, at);
    std::int64_t horizon = request_.now - w.window;
    if (w.horizon && *w.horizon > horizon) horizon = *w.horizon;
    const std::string mark = horizon != recorded - w.window ? markWithHorizon(w.mark, horizon) : w.mark;
    std::int64_t added = set_.add(ScoredNames{{recorded, member}, {0, mark}}, AddMode::only_new, nullptr) - 1;
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
    set_.expireIn(std::max(ttl, ceilDiv(recorded + w.window - request_.now, 1000)), this->redisMilliseconds());
    if (request_.now % kTrimEvery == 0) trimSlid(horizon);
    if (added > 0) w.newest = recorded;
    w.held += added;
  }

  // The answer (answerOf); `recorded` says whether phase two recorded an entry.
  Answer answerOf(Window& w, bool allowed, std::int64_t cost, std::int64_t limit, bool recorded) {
    Answer answer{allowed ? 1 : 0, limit - w.held, 0, 0};
    if (!allowed) {
      if (w.book) {
        answer.retry_after = this->freedAfter(w, w.held + cost - limit);
      } else {
        answer.retry_after = oldestToLeave(w.held, cost, limit, w.start, !recorded) + w.window - request_.now;
      }
    }
    if (w.held > 0) {
      if (w.book) {
        answer.reset_after = this->lastUnit(w) + w.window - request_.now;
      } else {
        if (!w.newest) w.newest = this->newestTime();
        answer.reset_after = *w.newest + w.window - request_.now;
      }
      if (answer.reset_after < 0) answer.reset_after = 0;
    }
    return answer;
  }

  std::optional<Window> window_;  // after phase one
  bool fits_ = false;             // whether the window had room for the cost when opened
  bool recorded_ = false;         // whether phase two recorded an entry
};

}  // namespace swl::native
