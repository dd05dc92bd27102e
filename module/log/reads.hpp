#pragma once
// What every step of a decision reads of its key's set, and the numbers every step shares: the reads
// the Lua's helpers make (newestTime, entryTime, the ZCOUNT of a window), over a Set (module/log/set.hpp).

#include "layout.hpp"
#include "request.hpp"
#include "set.hpp"
#include "window.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace swl::native {

template <class Set>
class LogReads {
  static_assert(isLogSet<Set>());

 protected:
  LogReads(Set& set, const Request& request) : set_(set), request_(request) {}

  std::int64_t ttl() const { return request_.ttl ? *request_.ttl : ceilDiv(request_.window, 1000); }

  // Redis's clock in milliseconds when the call decides on it (read once, as it began); none otherwise.
  std::optional<std::int64_t> redisMilliseconds() const {
    if (!request_.redis_time) return std::nullopt;
    return floorDiv(request_.now, 1000);
  }

  static ScoreRange after(std::int64_t start) {
    return {static_cast<double>(start), static_cast<double>(kTimesEnd), true, true};
  }

  // The entries after `start`: the Lua's ZCOUNT key (start (2^53). The set's size less the few members
  // below and above, walked: only a set counted by units holds members above (its sums), and in any other
  // the range above is found empty from the highest member alone. A few hundred weighted entries keep
  // more sums than a walk passes: then the bookkeeping's entry count, less the few at or before `start`.
  // Entries have times above 0, where only the bookkeeping member lies below (checked: a mark at 0 or a
  // time of 0 is counted in one read).
  std::int64_t liveAfter(std::int64_t start) const {
    const double inf = std::numeric_limits<double>::infinity();
    const std::int64_t below = set_.countUpTo({-inf, static_cast<double>(start), false, false}, kWalk);
    if (below <= kWalk) {
      const std::int64_t above = set_.countUpTo({static_cast<double>(kTimesEnd), inf, false, false}, kWalk);
      if (above <= kWalk) return set_.size() - below - above;
      if (start > 0 && set_.countUpTo({-inf, 0, false, false}, 1) == 1) {
        if (const std::optional<std::int64_t> held = bookkeptEntries()) return *held - (below - 1);
      }
    }
    return set_.count(after(start));
  }

  // The entries the set's bookkeeping counts, when its lowest member is bookkeeping of this layout.
  std::optional<std::int64_t> bookkeptEntries() const {
    const std::vector<Scored> lowest = set_.lowest({}, 1);
    if (lowest.empty()) return std::nullopt;
    const std::optional<Book> book = bookkeepingOf(lowest[0].member);
    if (!book) return std::nullopt;
    return book->next - book->oldest;
  }

  std::int64_t newestTime() const {
    const std::vector<Scored> newest = set_.highest({0, static_cast<double>(kTimesEnd), true, true}, 1);
    return newest.empty() ? 0 : static_cast<std::int64_t>(newest[0].score);
  }

  std::int64_t scoreAtRank(std::int64_t rank) const {
    const std::vector<Scored> found = set_.byRank(rank, rank, std::nullopt);
    if (found.empty()) throw CommandError("ERR swl: the log " + set_.name() + " holds fewer entries than it counts");
    return static_cast<std::int64_t>(found[0].score);
  }

  // The time to record an entry at (entryTime): `at`, or 1 us after the newest entry when that is not
  // later. Redis's clock is trusted to have moved on since the last call.
  std::int64_t entryTime(const Window& w, std::int64_t at) const {
    if (request_.redis_time && at == request_.now && !w.book) return at;
    const std::int64_t newest = w.book ? w.book->newest : (w.newest ? *w.newest : newestTime());
    return newest >= at ? newest + 1 : at;
  }

  Set& set_;
  const Request& request_;
};

}  // namespace swl::native
