#pragma once
// A sorted set in memory that keeps Redis's rules (members ordered by score, then byte by byte; ranks from
// 0, below 0 from the top; ZADD's NX and LT), as the module's log asks a set (module/log/set.hpp): the log
// decided in the test's own process, without Redis. It counts the writes it is asked for, so that a test
// can tell which of the log's paths its calls took.

#include "../../module/log/set.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::test {

class MemorySet {
 public:
  using Scored = swl::native::Scored;
  using ScoreRange = swl::native::ScoreRange;
  using RankHint = swl::native::RankHint;
  using AddMode = swl::native::AddMode;

  explicit MemorySet(std::string name) : name_(std::move(name)) {}

  std::string name() const { return name_; }
  std::int64_t size() const { return static_cast<std::int64_t>(ordered_.size()); }

  std::int64_t count(const ScoreRange& range) const { return static_cast<std::int64_t>(inRange(range).size()); }
  std::int64_t countUpTo(const ScoreRange& range, std::int64_t cap) const {
    return static_cast<std::int64_t>(inRange(range, cap + 1).size());
  }

  std::vector<Scored> lowest(const ScoreRange& range, std::int64_t limit) const { return inRange(range, limit); }
  std::vector<Scored> highest(const ScoreRange& range, std::int64_t limit) const {
    std::vector<Scored> found = inRange(range);
    std::reverse(found.begin(), found.end());
    if (limit >= 0 && static_cast<std::int64_t>(found.size()) > limit) found.resize(static_cast<std::size_t>(limit));
    return found;
  }
  std::optional<Scored> lowestAt(const ScoreRange& range, std::int64_t offset) const {
    std::vector<Scored> found = inRange(range, offset + 1);
    if (offset < 0 || offset >= static_cast<std::int64_t>(found.size())) return std::nullopt;
    return found[static_cast<std::size_t>(offset)];
  }
  std::optional<double> score(std::string_view member) const {
    const auto found = scores_.find(std::string(member));
    if (found == scores_.end()) return std::nullopt;
    return found->second;
  }

  std::vector<Scored> byRank(std::int64_t from, std::int64_t to, const std::optional<RankHint>&) const {
    if (!ranks(from, to)) return {};
    std::vector<Scored> found;
    auto at = std::next(ordered_.begin(), from);
    for (std::int64_t rank = from; rank <= to; ++rank, ++at) found.push_back({at->second, at->first});
    return found;
  }
  std::vector<std::string> membersByRank(std::int64_t from, std::int64_t to, const RankHint& hint) const {
    std::vector<std::string> members;
    for (Scored& found : byRank(from, to, hint)) members.push_back(std::move(found.member));
    return members;
  }

  template <class Members>
  std::int64_t add(const Members& members, AddMode mode, bool* added) {
    ++writes_["ZADD"];
    std::int64_t count = 0;
    for (const auto& [score, member] : members) {
      const std::string name(member);
      const auto was = scores_.find(name);
      const bool is_new = was == scores_.end();
      if (is_new) {
        insert(name, static_cast<double>(score));
        ++count;
      } else if (mode == AddMode::any || (mode == AddMode::only_lower && score < was->second)) {
        ordered_.erase({was->second, name});
        insert(name, static_cast<double>(score));
      }
      if (added) *added++ = is_new;
    }
    return count;
  }
  template <class Names>
  void remove(const Names& names) {
    ++writes_["ZREM"];
    for (const auto& member : names) erase(std::string(member));
  }
  void removeByRank(std::int64_t first, std::int64_t last) {
    ++writes_["ZREMRANGEBYRANK"];
    if (!ranks(first, last)) return;
    std::vector<std::string> gone;
    auto at = std::next(ordered_.begin(), first);
    for (std::int64_t rank = first; rank <= last; ++rank, ++at) gone.push_back(at->second);
    for (const std::string& member : gone) erase(member);
  }
  void removeByScore(const ScoreRange& range) {
    ++writes_["ZREMRANGEBYSCORE"];
    for (const Scored& found : inRange(range)) erase(found.member);
  }
  void expireIn(std::int64_t milliseconds, std::optional<std::int64_t> now) {
    ++writes_["PEXPIRE"];
    expires_in_ = milliseconds;
    expired_from_ = now;
  }
  void unlink() {
    ++writes_["UNLINK"];
    ordered_.clear();
    scores_.clear();
  }

  // What the test reads: every member, lowest first; the writes asked for, by command; the last expiry.
  std::vector<Scored> all() const { return inRange({}); }
  std::int64_t writes(const std::string& command) const {
    const auto found = writes_.find(command);
    return found == writes_.end() ? 0 : found->second;
  }
  std::int64_t expiresIn() const { return expires_in_; }

 private:
  void insert(const std::string& member, double score) {
    scores_[member] = score;
    ordered_.insert({score, member});
  }
  void erase(const std::string& member) {
    const auto found = scores_.find(member);
    if (found == scores_.end()) return;
    ordered_.erase({found->second, member});
    scores_.erase(found);
  }
  static bool inside(const ScoreRange& range, double score) {
    const bool above_min = range.min_open ? score > range.min : score >= range.min;
    const bool below_max = range.max_open ? score < range.max : score <= range.max;
    return above_min && below_max;
  }
  // The members in `range`, lowest first, at most `limit` (every one when below 0).
  std::vector<Scored> inRange(const ScoreRange& range, std::int64_t limit = -1) const {
    std::vector<Scored> found;
    for (auto at = ordered_.lower_bound({range.min, std::string()}); at != ordered_.end(); ++at) {
      if (!inside(range, at->first)) {
        if (at->first > range.max) break;
        continue;  // the open lower end
      }
      if (limit >= 0 && static_cast<std::int64_t>(found.size()) >= limit) break;
      found.push_back({at->second, at->first});
    }
    return found;
  }
  // ZRANGE's ranks: below 0 counted from the top, clamped to the set; false when nothing lies between.
  bool ranks(std::int64_t& from, std::int64_t& to) const {
    const std::int64_t members = size();
    if (from < 0) from += members;
    if (to < 0) to += members;
    if (from < 0) from = 0;
    if (to >= members) to = members - 1;
    return from <= to;
  }

  std::string name_;
  std::set<std::pair<double, std::string>> ordered_;
  std::map<std::string, double> scores_;
  std::map<std::string, std::int64_t> writes_;
  std::int64_t expires_in_ = 0;
  std::optional<std::int64_t> expired_from_;
};

static_assert(swl::native::isLogSet<MemorySet>());

}  // namespace swl::test
