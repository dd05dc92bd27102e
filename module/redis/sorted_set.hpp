#pragma once
// One limited key's sorted set over Redis's module API, as the log asks it (module/log/set.hpp): Redis's
// low-level sorted-set API, with every write replicated as its effect (the ZADD, ZREM, PEXPIREAT or UNLINK
// it did), so that replicas and the AOF hold exactly this set. Included by swl_native.cpp alone
// (redismodule.h defines its API's pointers in the one file that includes it).
//
// Reads stay bounded as the Lua's are: a read walks at most kWalk members from either end of a range, or
// from a place the log knows the rank of (its window's start); past that (a count over many entries that
// slid out, an entry deep inside a large set) it asks Redis's own command through RedisModule_Call, which
// finds a rank in O(log n), as the Lua's redis.call does.

#include "../log/layout.hpp"
#include "../log/set.hpp"
#include "words.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern "C" {
#include <redismodule.h>
}

namespace swl::native {

class RedisSortedSet {
 public:
  // The set at key `name`; its writes pass `guard`, the command's one (a command of several keys writes
  // through several sets). `member`, when given, is the client's argument that holds the request's member:
  // a write of that text hands it on instead of making its own.
  RedisSortedSet(RedisModuleCtx* ctx, RedisModuleString* name, MemoryGuard& guard, RedisModuleString* member = nullptr)
      : ctx_(ctx),
        name_(name),
        member_(member),
        guard_(guard),
        key_(static_cast<RedisModuleKey*>(RedisModule_OpenKey(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE))) {
    const int type = RedisModule_KeyType(key_.get());
    if (type != REDISMODULE_KEYTYPE_EMPTY && type != REDISMODULE_KEYTYPE_ZSET) {
      throw CommandError(REDISMODULE_ERRORMSG_WRONGTYPE);
    }
  }

  // The key, for messages.
  std::string name() const {
    std::size_t length = 0;
    const char* bytes = RedisModule_StringPtrLen(name_, &length);
    return {bytes, length};
  }

  // Reads ---------------------------------------------------------------------------------------------

  std::int64_t size() const {
    return RedisModule_KeyType(key_.get()) == REDISMODULE_KEYTYPE_ZSET
               ? static_cast<std::int64_t>(RedisModule_ValueLength(key_.get()))
               : 0;
  }

  // ZCOUNT over `range`.
  std::int64_t count(const ScoreRange& range) const {
    const std::int64_t walked = countUpTo(range, kWalk);
    if (walked <= kWalk) return walked;
    return callInteger("ZCOUNT", range);
  }

  // Whether `range` holds more than `cap` members, or else how many (min(count, cap + 1)).
  std::int64_t countUpTo(const ScoreRange& range, std::int64_t cap) const {
    RedisModuleKey* key = key_.get();
    if (size() == 0 || RedisModule_ZsetFirstInScoreRange(key, range.min, range.max, range.min_open, range.max_open) !=
                           REDISMODULE_OK) {
      return 0;
    }
    std::int64_t counted = 0;
    while (!RedisModule_ZsetRangeEndReached(key) && counted <= cap) {
      ++counted;
      RedisModule_ZsetRangeNext(key);
    }
    RedisModule_ZsetRangeStop(key);
    return counted;
  }

  // The members in `range`, lowest first, at most `limit` (ZRANGEBYSCORE ... LIMIT 0 limit).
  std::vector<Scored> lowest(const ScoreRange& range, std::int64_t limit) const { return walk(range, 0, limit, true); }
  // The members in `range`, highest first, at most `limit` (ZREVRANGEBYSCORE ... LIMIT 0 limit).
  std::vector<Scored> highest(const ScoreRange& range, std::int64_t limit) const {
    return walk(range, 0, limit, false);
  }
  // The `offset`-th member in `range` counted from the lowest (from 0), at most kWalk in (ZRANGEBYSCORE
  // ... LIMIT offset 1): the members before it are stepped over, unread.
  std::optional<Scored> lowestAt(const ScoreRange& range, std::int64_t offset) const {
    std::vector<Scored> found = walk(range, offset, 1, true);
    if (found.empty()) return std::nullopt;
    return std::move(found[0]);
  }

  // ZSCORE.
  std::optional<double> score(std::string_view member) const {
    double found = 0;
    const Text name(ctx_, member);
    if (size() == 0 || RedisModule_ZsetScore(key_.get(), name.get(), &found) != REDISMODULE_OK) return std::nullopt;
    return found;
  }

  // ZRANGE from to WITHSCORES, by rank (below 0: from the highest). Walked when the ranks lie near either
  // end, or near `hint`'s when one is given; asked of Redis's ZRANGE otherwise.
  std::vector<Scored> byRank(std::int64_t from, std::int64_t to, const std::optional<RankHint>& hint) const {
    return byRank(from, to, hint, Scores::read);
  }

  // ZRANGE from to: the members alone. Where Redis's command is asked, it leaves the scores out: it
  // would format each as text and this side read it back, which costs more than the rest of the read.
  std::vector<std::string> membersByRank(std::int64_t from, std::int64_t to, const RankHint& hint) const {
    std::vector<std::string> members;
    for (Scored& found : byRank(from, to, hint, Scores::skipped)) members.push_back(std::move(found.member));
    return members;
  }

  // Writes, each replicated as what it did ----------------------------------------------------------

  // ZADD [NX|LT] score member [score member ...]: how many members it added; `added`, when given, is
  // told which ones were new (one flag per member). `members` holds {score, member} pairs.
  template <class Members>
  std::int64_t add(const Members& members, AddMode mode, bool* added) {
    if (std::empty(members)) return 0;
    guard_.beforeWrite(true);
    ScratchWords scratch;
    std::vector<Text>& words = scratch.words();
    const int flags = mode == AddMode::only_new     ? REDISMODULE_ZADD_NX
                      : mode == AddMode::only_lower ? REDISMODULE_ZADD_LT
                                                    : 0;
    if (mode == AddMode::only_new) words.push_back(Text::held(shared_words.nx));
    if (mode == AddMode::only_lower) words.push_back(Text::held(shared_words.lt));
    std::int64_t count = 0;
    for (const auto& [score, member] : members) {
      words.push_back(score == 0 ? Text::held(shared_words.zero) : Text(ctx_, score));
      words.push_back(word(member, score));
      int outcome = flags;
      RedisModule_ZsetAdd(key_.get(), static_cast<double>(score), words.back().get(), &outcome);
      const bool is_new = (outcome & REDISMODULE_ZADD_ADDED) != 0;
      count += is_new ? 1 : 0;
      if (added) *added++ = is_new;
    }
    replicate("ZADD", words);
    return count;
  }

  // ZREM: removes `members` (those it holds).
  template <class Names>
  void remove(const Names& members) {
    if (std::empty(members)) return;
    guard_.beforeWrite(false);
    ScratchWords scratch;
    std::vector<Text>& words = scratch.words();
    for (const auto& member : members) {
      words.emplace_back(ctx_, std::string_view(member));
      int deleted = 0;
      RedisModule_ZsetRem(key_.get(), words.back().get(), &deleted);
    }
    replicate("ZREM", words);
  }

  // ZREMRANGEBYRANK key first last and ZREMRANGEBYSCORE key min max: Redis's own commands, replicated as
  // they are (as the Lua's are), where reading each member to remove it and name it to the replicas costs
  // more. A decision removes only after it has written, so that the set never empties under the key
  // this one holds open.
  void removeByRank(std::int64_t first, std::int64_t last) {
    if (last < first) return;
    guard_.beforeWrite(false);
    const Reply reply(RedisModule_Call(ctx_, "ZREMRANGEBYRANK", "!sll", name_, static_cast<long long>(first),
                                       static_cast<long long>(last)));
    expectInteger(reply, "ZREMRANGEBYRANK");
  }
  void removeByScore(const ScoreRange& range) {
    guard_.beforeWrite(false);
    const std::string min = rangeEnd(range.min, range.min_open);
    const std::string max = rangeEnd(range.max, range.max_open);
    const Reply reply(
        RedisModule_Call(ctx_, "ZREMRANGEBYSCORE", "!sbb", name_, min.data(), min.size(), max.data(), max.size()));
    expectInteger(reply, "ZREMRANGEBYSCORE");
  }

  // PEXPIRE ttl, replicated as the PEXPIREAT it sets (as Redis replicates a script's PEXPIRE). `now`, when
  // given, is Redis's clock as the command already read it, in milliseconds: not read again.
  void expireIn(std::int64_t milliseconds, std::optional<std::int64_t> now) {
    guard_.beforeWrite(false);
    const std::int64_t at = (now ? *now : RedisModule_Milliseconds()) + milliseconds;
    if (RedisModule_SetAbsExpire) {
      RedisModule_SetAbsExpire(key_.get(), at);
    } else {
      RedisModule_SetExpire(key_.get(), milliseconds);  // Redis 7.0: the same moment, read again
    }
    ScratchWords scratch;
    std::vector<Text>& words = scratch.words();
    words.emplace_back(ctx_, at);
    replicate("PEXPIREAT", words);
  }

  // UNLINK: the whole set goes, freed in Redis's background thread when it is large.
  void unlink() {
    guard_.beforeWrite(false);
    RedisModule_UnlinkKey(key_.get());
    ScratchWords scratch;
    replicate("UNLINK", scratch.words());
  }

 private:
  // The string a write names `member` by: the client's argument when it holds the text, a kept mark for a
  // mark (score 0), or one made for this write.
  Text word(std::string_view member, std::int64_t score) const {
    if (member_ != nullptr) {
      std::size_t length = 0;
      const char* bytes = RedisModule_StringPtrLen(member_, &length);
      if (bytes == member.data() && length == member.size()) return Text::held(member_);
    }
    if (score == 0 && !member.empty() && member[0] == kMarkByte) {
      if (RedisModuleString* kept = kept_marks.of(member)) return Text::held(kept);
    }
    return Text(ctx_, member);
  }

  struct KeyCloser {
    void operator()(RedisModuleKey* key) const { RedisModule_CloseKey(key); }
  };
  struct ReplyFreer {
    void operator()(RedisModuleCallReply* reply) const { RedisModule_FreeCallReply(reply); }
  };
  using Reply = std::unique_ptr<RedisModuleCallReply, ReplyFreer>;

  static std::string rangeEnd(double end, bool open) {
    if (std::isinf(end)) return end < 0 ? "-inf" : "+inf";
    return (open ? "(" : "") + integerText(static_cast<std::int64_t>(end));
  }

  // The members of `range` from one end (the lowest when `upward`), the first `skip` stepped over unread
  // (reading a member copies it), then at most `limit` of them (all when below 0).
  std::vector<Scored> walk(const ScoreRange& range, std::int64_t skip, std::int64_t limit, bool upward) const {
    std::vector<Scored> found;
    RedisModuleKey* key = key_.get();
    if (size() == 0 || limit == 0) return found;
    found.reserve(static_cast<std::size_t>(limit > 0 && limit < kWalk ? limit : kWalk));
    const int positioned =
        upward ? RedisModule_ZsetFirstInScoreRange(key, range.min, range.max, range.min_open, range.max_open)
               : RedisModule_ZsetLastInScoreRange(key, range.min, range.max, range.min_open, range.max_open);
    if (positioned != REDISMODULE_OK) return found;
    for (; skip > 0 && !RedisModule_ZsetRangeEndReached(key); --skip) {
      if (upward) {
        RedisModule_ZsetRangeNext(key);
      } else {
        RedisModule_ZsetRangePrev(key);
      }
    }
    while (!RedisModule_ZsetRangeEndReached(key) && (limit < 0 || static_cast<std::int64_t>(found.size()) < limit)) {
      double score = 0;
      RedisModuleString* element = RedisModule_ZsetRangeCurrentElement(key, &score);
      std::size_t length = 0;
      const char* bytes = RedisModule_StringPtrLen(element, &length);
      found.push_back({std::string(bytes, length), score});
      RedisModule_FreeString(ctx_, element);
      if (upward) {
        RedisModule_ZsetRangeNext(key);
      } else {
        RedisModule_ZsetRangePrev(key);
      }
    }
    RedisModule_ZsetRangeStop(key);
    return found;
  }

  // Whether a read by Redis's ZRANGE asks for the scores (WITHSCORES).
  enum class Scores { read, skipped };

  std::vector<Scored> byRank(std::int64_t from, std::int64_t to, const std::optional<RankHint>& hint,
                             Scores scores) const {
    const std::int64_t members = size();
    if (from < 0) from += members;
    if (to < 0) to += members;
    if (from < 0) from = 0;
    if (to >= members) to = members - 1;
    if (from > to) return {};
    const ScoreRange all;
    if (to < kWalk) return walk(all, from, to - from + 1, true);
    if (members - 1 - from < kWalk) return walkDown(all, members - 1 - to, to - from + 1);
    if (hint) {
      const ScoreRange at_or_below{REDISMODULE_NEGATIVE_INFINITE, hint->score, false, false};
      const ScoreRange above{hint->score, REDISMODULE_POSITIVE_INFINITE, true, false};
      const std::int64_t skipped_down = hint->below - 1 - to;  // from the highest at or below
      const std::int64_t skipped_up = from - hint->below;      // from the lowest above
      if (skipped_up >= 0 && skipped_up < kWalk) return walk(above, skipped_up, to - from + 1, true);
      if (skipped_down >= 0 && skipped_down < kWalk) return walkDown(at_or_below, skipped_down, to - from + 1);
      if (skipped_up < 0 && skipped_down < 0 && hint->below - from <= kWalk && to - hint->below < kWalk) {
        std::vector<Scored> found = walkDown(at_or_below, 0, hint->below - from);
        std::vector<Scored> rest = walk(above, 0, to - hint->below + 1, true);
        std::move(rest.begin(), rest.end(), std::back_inserter(found));
        return found;
      }
    }
    return callRange(from, to, scores);
  }

  // walk() downward, the members then put lowest first.
  std::vector<Scored> walkDown(const ScoreRange& range, std::int64_t skip, std::int64_t limit) const {
    std::vector<Scored> found = walk(range, skip, limit, false);
    std::reverse(found.begin(), found.end());
    return found;
  }

  std::int64_t callInteger(const char* command, const ScoreRange& range) const {
    const std::string min = rangeEnd(range.min, range.min_open);
    const std::string max = rangeEnd(range.max, range.max_open);
    const Reply reply(RedisModule_Call(ctx_, command, "sbb", name_, min.data(), min.size(), max.data(), max.size()));
    return expectInteger(reply, command);
  }

  // The integer Redis's `command` answered.
  static std::int64_t expectInteger(const Reply& reply, const char* command) {
    if (!reply || RedisModule_CallReplyType(reply.get()) != REDISMODULE_REPLY_INTEGER) {
      throw CommandError(std::string("ERR swl: ") + command + " failed inside the module");
    }
    return RedisModule_CallReplyInteger(reply.get());
  }

  // ZRANGE from to [WITHSCORES]; each score 0 when `scores` skips them.
  std::vector<Scored> callRange(std::int64_t from, std::int64_t to, Scores scores) const {
    const bool with_scores = scores == Scores::read;
    const Reply reply(with_scores ? RedisModule_Call(ctx_, "ZRANGE", "sllc", name_, static_cast<long long>(from),
                                                     static_cast<long long>(to), "WITHSCORES")
                                  : RedisModule_Call(ctx_, "ZRANGE", "sll", name_, static_cast<long long>(from),
                                                     static_cast<long long>(to)));
    if (!reply || RedisModule_CallReplyType(reply.get()) != REDISMODULE_REPLY_ARRAY) {
      throw CommandError("ERR swl: ZRANGE failed inside the module");
    }
    const auto text = [&reply](std::size_t at) {
      std::size_t length = 0;
      const char* bytes = RedisModule_CallReplyStringPtr(RedisModule_CallReplyArrayElement(reply.get(), at), &length);
      return std::string(bytes, length);
    };
    std::vector<Scored> found;
    const std::size_t length = RedisModule_CallReplyLength(reply.get());
    const std::size_t step = with_scores ? 2 : 1;
    for (std::size_t i = 0; i + step - 1 < length; i += step) {
      found.push_back({text(i), with_scores ? std::stod(text(i + 1)) : 0});
    }
    return found;
  }

  // Replicates `command` on this key with `words`.
  void replicate(const char* command, const std::vector<Text>& words) {
    static std::vector<RedisModuleString*> argv;  // kept between calls: a decision allocates none
    argv.assign(1, name_);
    for (const Text& word : words) argv.push_back(word.get());
    RedisModule_Replicate(ctx_, command, "v", argv.data(), argv.size());
  }

  RedisModuleCtx* ctx_;
  RedisModuleString* name_;
  RedisModuleString* member_;
  MemoryGuard& guard_;
  std::unique_ptr<RedisModuleKey, KeyCloser> key_;
};

static_assert(isLogSet<RedisSortedSet>());

}  // namespace swl::native
