#pragma once
// The sorted set a log is decided over, as the log's steps ask it (module/log/decision.hpp): the reads
// the Lua makes with redis.call, and the writes, each one a command a replica would be sent. A contract,
// so that the log runs over Redis's module API (module/redis/sorted_set.hpp) and, in the tests, over a set
// in memory (tests/support/memory_set.hpp): the log itself never includes redismodule.h.
//
// A Set has, for `range` a ScoreRange and `members` a range of {score, member} pairs (std::int64_t and
// anything a std::string_view is made from):
//   std::string name() const                                 the key, for messages
//   std::int64_t size() const                                ZCARD
//   std::int64_t count(const ScoreRange&) const              ZCOUNT
//   std::int64_t countUpTo(const ScoreRange&, std::int64_t cap) const
//                                                            min(ZCOUNT, cap + 1): walks at most cap + 1
//   std::vector<Scored> lowest(const ScoreRange&, std::int64_t limit) const
//   std::vector<Scored> highest(const ScoreRange&, std::int64_t limit) const
//                                                            ZRANGEBYSCORE / ZREVRANGEBYSCORE ... LIMIT 0
//                                                            limit (every member when limit < 0)
//   std::optional<Scored> lowestAt(const ScoreRange&, std::int64_t offset) const
//                                                            ZRANGEBYSCORE ... LIMIT offset 1
//   std::optional<double> score(std::string_view) const      ZSCORE
//   std::vector<Scored> byRank(std::int64_t from, std::int64_t to, std::optional<RankHint>) const
//                                                            ZRANGE from to WITHSCORES (below 0: from the
//                                                            top); a hint says where ranks are cheap to find
//   std::vector<std::string> membersByRank(std::int64_t from, std::int64_t to, const RankHint&) const
//   std::int64_t add(const Members&, AddMode, bool* added)   ZADD [NX|LT]: how many were new (`added`, when
//                                                            not null, is told which, one flag per member)
//   void remove(const Names&)                                ZREM
//   void removeByRank(std::int64_t first, std::int64_t last) ZREMRANGEBYRANK
//   void removeByScore(const ScoreRange&)                    ZREMRANGEBYSCORE
//   void expireIn(std::int64_t ms, std::optional<std::int64_t> now_ms)
//                                                            PEXPIRE, from the command's own clock when given
//   void unlink()                                            UNLINK
// Every write may throw CommandError (Redis over maxmemory refuses a decision's first write that grows it).

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace swl::native {

// An error the command answers with, its text as Redis sends it: ERR, OOM or one of the wire format's
// error words, then what went wrong.
struct CommandError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A member and its score.
struct Scored {
  std::string member;
  double score = 0;
};

// A range of scores, each end open or closed (ZCOUNT's "(x" and "x").
struct ScoreRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  bool max_open = false;
};

// Where ranks are cheap to find: the members scored at or below `score` are the `below` lowest (a log
// knows how many of its entries slid out of its window, and where the window starts).
struct RankHint {
  double score = 0;
  std::int64_t below = 0;
};

// ZADD's condition: none, NX (only members not there), LT (only a lower score for a member there).
enum class AddMode { any, only_new, only_lower };

// A set reads at most this many members from either end of a range, or from a hint's place, one by one;
// past that the log asks for a count or a rank in one read (Redis's own command, O(log n)).
inline constexpr std::int64_t kWalk = 32;

// The members the log writes in one ZADD.
using ScoredNames = std::initializer_list<std::pair<std::int64_t, std::string_view>>;

// Whether `Set` has what the log asks of a set, each member named by the assertion that fails.
template <class Set>
constexpr bool isLogSet() {
  using Names = std::vector<std::string>;
  static_assert(std::is_same_v<decltype(std::declval<const Set&>().size()), std::int64_t>,
                "a log's Set needs std::int64_t size() const");
  static_assert(std::is_same_v<decltype(std::declval<const Set&>().count(ScoreRange())), std::int64_t>,
                "a log's Set needs std::int64_t count(const ScoreRange&) const");
  static_assert(std::is_same_v<decltype(std::declval<const Set&>().countUpTo(ScoreRange(), 1)), std::int64_t>,
                "a log's Set needs std::int64_t countUpTo(const ScoreRange&, std::int64_t) const");
  static_assert(std::is_same_v<decltype(std::declval<const Set&>().lowest(ScoreRange(), 1)), std::vector<Scored>>,
                "a log's Set needs std::vector<Scored> lowest(const ScoreRange&, std::int64_t) const");
  static_assert(std::is_same_v<decltype(std::declval<const Set&>().highest(ScoreRange(), 1)), std::vector<Scored>>,
                "a log's Set needs std::vector<Scored> highest(const ScoreRange&, std::int64_t) const");
  static_assert(std::is_same_v<decltype(std::declval<const Set&>().lowestAt(ScoreRange(), 0)), std::optional<Scored>>,
                "a log's Set needs std::optional<Scored> lowestAt(const ScoreRange&, std::int64_t) const");
  static_assert(std::is_same_v<decltype(std::declval<const Set&>().score("m")), std::optional<double>>,
                "a log's Set needs std::optional<double> score(std::string_view) const");
  static_assert(
      std::is_same_v<decltype(std::declval<const Set&>().byRank(0, 0, std::optional<RankHint>())), std::vector<Scored>>,
      "a log's Set needs std::vector<Scored> byRank(std::int64_t, std::int64_t, std::optional<RankHint>)");
  static_assert(
      std::is_same_v<decltype(std::declval<const Set&>().membersByRank(0, 0, RankHint())), std::vector<std::string>>,
      "a log's Set needs std::vector<std::string> membersByRank(std::int64_t, std::int64_t, const RankHint&)");
  static_assert(std::is_same_v<decltype(std::declval<Set&>().add(ScoredNames(), AddMode::any, nullptr)), std::int64_t>,
                "a log's Set needs std::int64_t add(const Members&, AddMode, bool*)");
  static_assert(std::is_void_v<decltype(std::declval<Set&>().remove(Names()))>,
                "a log's Set needs void remove(const Names&)");
  static_assert(std::is_void_v<decltype(std::declval<Set&>().removeByRank(0, 0))>,
                "a log's Set needs void removeByRank(std::int64_t, std::int64_t)");
  static_assert(std::is_void_v<decltype(std::declval<Set&>().removeByScore(ScoreRange()))>,
                "a log's Set needs void removeByScore(const ScoreRange&)");
  static_assert(std::is_void_v<decltype(std::declval<Set&>().expireIn(1, std::optional<std::int64_t>()))>,
                "a log's Set needs void expireIn(std::int64_t, std::optional<std::int64_t>)");
  static_assert(std::is_void_v<decltype(std::declval<Set&>().unlink())>, "a log's Set needs void unlink()");
  static_assert(std::is_same_v<decltype(std::declval<const Set&>().name()), std::string>,
                "a log's Set needs std::string name() const");
  return true;
}

}  // namespace swl::native
