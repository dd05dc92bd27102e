// swl_native: swl's sliding window log decided inside Redis or Valkey, on the same keys and in the same
// layout as swl's Lua, at a fraction of the script's cost (docs/operations.md says how to load it).
//
//   SWL.DECIDE key window limit [cost [now [member [ttl [count_rejected]]]]]
//
// takes the arguments swl's script takes, in the same order (swl/detail/script/assembly.hpp,
// kOneKeyArguments, says what each means), and answers what it answers: {allowed, remaining,
// retry_after_us, reset_after_us}, or the same errors (EXPIRED past a deadline, OOM before its first
// write, WRONGTYPE). A cost of 0 peeks. So a client sends this where it sent EVALSHA, and a key goes on
// being decided by either.
//
//   SWL.DECIDEALL numkeys key [key ...] now member recording cost window limit ttl counting [...]
//
// is MultiLimiter's script (swl/composites/detail/multi_limiter_core.hpp, kMultiWindowArguments) for
// rules that are all logs (counting ''): every key decided, and the request recorded in all or in none.
//
// One file includes redismodule.h, which defines the API's pointers: the parts it uses are headers. The
// log (module/log/) knows nothing of Redis; this is its glue: the commands, their words, Redis's clock and
// its sorted sets (module/redis/sorted_set.hpp). The commands' names, their arguments' places and the
// layout's version are the wire format's (swl/detail/script/wire.hpp).

#include "../log/arguments.hpp"
#include "../log/decision.hpp"
#include "sorted_set.hpp"

#include <sys/time.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swl::native {
namespace {

std::string_view textOf(RedisModuleString* argument) {
  std::size_t length = 0;
  const char* bytes = RedisModule_StringPtrLen(argument, &length);
  return {bytes, length};
}

// Redis's own clock, as the script reads it with TIME: from Redis 7.2 on, the time Redis took when the
// command began (RedisModule_CachedMicroseconds, which 7.0 lacks); before, gettimeofday's.
std::int64_t redisTime() {
  if (RedisModule_CachedMicroseconds) return RedisModule_CachedMicroseconds();
  timeval now{};
  gettimeofday(&now, nullptr);
  return std::int64_t{now.tv_sec} * 1000000 + now.tv_usec;
}

// ARGV[index] of a command whose key is argv[1] and whose arguments follow it; nullopt past the last.
struct ArgumentsAfter {
  RedisModuleString** first;  // ARGV[1]
  int count;
  std::optional<std::string_view> operator()(int index) const {
    if (index < 1 || index > count) return std::nullopt;
    return textOf(first[index - 1]);
  }
};

void replyWith(RedisModuleCtx* ctx, const Answer& answer) {
  for (const std::int64_t value : {answer.remaining, answer.retry_after, answer.reset_after}) {
    RedisModule_ReplyWithLongLong(ctx, value);
  }
}

// Runs `decision`, answering the errors it throws as the command's error reply.
template <class Decision>
int answering(RedisModuleCtx* ctx, Decision&& decision) {
  try {
    decision();
  } catch (const CommandError& error) {
    RedisModule_ReplyWithError(ctx, error.what());
  } catch (const std::exception& error) {
    RedisModule_ReplyWithError(ctx, (std::string("ERR swl: ") + error.what()).c_str());
  }
  return REDISMODULE_OK;
}

int decideCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 2 + wire::kLimitArgument || argc > 2 + wire::kDecideArguments) return RedisModule_WrongArity(ctx);
  return answering(ctx, [&] {
    const Request request = decideRequest(ArgumentsAfter{argv + 2, argc - 2}, redisTime);
    MemoryGuard guard;
    RedisModuleString* member = argc > 1 + wire::kMemberArgument ? argv[1 + wire::kMemberArgument] : nullptr;
    RedisSortedSet set(ctx, argv[1], guard, member);
    const Answer answer = LogDecision<RedisSortedSet>(set, request).decide();
    RedisModule_ReplyWithArray(ctx, 4);
    RedisModule_ReplyWithLongLong(ctx, answer.allowed);
    replyWith(ctx, answer);
  });
}

// A key named by two rules would be read twice before either records, and recorded twice over what the
// first read saw: refused before anything is read.
void requireKeysApart(RedisModuleString** keys, std::int64_t rules) {
  for (std::int64_t i = 0; i < rules; ++i) {
    for (std::int64_t j = 0; j < i; ++j) {
      if (textOf(keys[i]) == textOf(keys[j])) {
        throw CommandError("ERR swl: the key '" + std::string(textOf(keys[i])) +
                           "' is named twice; each rule takes a key of its own");
      }
    }
  }
}

int decideAllCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 2) return RedisModule_WrongArity(ctx);
  return answering(ctx, [&] {
    const std::int64_t rules = integerArgument(textOf(argv[1]), "key count", 1);
    RedisModuleString** keys = argv + 2;
    const std::int64_t sent = argc - 2 - std::max<std::int64_t>(rules, 0);
    if (rules < 1 || sent < 0) throw CommandError("ERR swl: the key count " + std::to_string(rules) + " does not fit");
    const ArgumentsAfter arguments{keys + rules, static_cast<int>(sent)};
    std::vector<Request> requests = decideAllRequests(rules, sent, arguments, redisTime);
    requireKeysApart(keys, rules);
    MemoryGuard guard;
    std::deque<RedisSortedSet> sets;  // in place: each decision holds its set
    for (std::int64_t i = 0; i < rules; ++i) sets.emplace_back(ctx, keys[i], guard);
    std::vector<LogDecision<RedisSortedSet>> decisions;
    decisions.reserve(requests.size());
    bool allowed = true;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      decisions.emplace_back(sets[i], requests[i]);
      allowed = decisions.back().open() && allowed;
    }
    // Recorded in every rule, each at its own cost, or in none ('-' is a dry run).
    const std::string_view recording = *arguments(wire::kMultiRecordingArgument);
    std::optional<std::string> member;
    if (recording != "-" && (allowed || recording == "1")) member = decisions[0].memberOrTimestamp();
    // Each rule recorded and then answered, in turn, as the script does: the reply begins only once
    // nothing can fail.
    std::vector<Answer> answers;
    for (auto& decision : decisions) {
      decision.record(member);
      answers.push_back(decision.answer());
    }
    RedisModule_ReplyWithArray(ctx, 1 + 3 * rules);
    RedisModule_ReplyWithLongLong(ctx, allowed ? 1 : 0);
    for (const Answer& answer : answers) replyWith(ctx, answer);
  });
}

}  // namespace
}  // namespace swl::native

namespace swl::native {
namespace {

// Registers the command `name`, a write to sorted sets (its ACL categories, Redis 7.2+: an older server
// goes without them). Not deny-oom: like the script, a decision that writes nothing (a refusal, a peek)
// is answered over maxmemory, and one that writes is refused before its first write (MemoryGuard). Its
// keys are argv[first..last] when `first` is not 0.
RedisModuleCommand* registerCommand(RedisModuleCtx* ctx, std::string_view name, RedisModuleCmdFunc run, int first,
                                    int last) {
  std::string lower(name);  // as Redis names it in its replies and its ACL rules
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (RedisModule_CreateCommand(ctx, lower.c_str(), run, "write", first, last, first == 0 ? 0 : 1) == REDISMODULE_ERR) {
    return nullptr;
  }
  RedisModuleCommand* command = RedisModule_GetCommand(ctx, lower.c_str());
  if (command && RedisModule_SetCommandACLCategories &&
      RedisModule_SetCommandACLCategories(command, "write sortedset") == REDISMODULE_ERR) {
    return nullptr;
  }
  return command;
}

// The tip COMMAND INFO shows with each command: the layout's version, which the handshake reads
// (swl/detail/io/native_module.hpp), so that a client sends the commands only to a module of its layout.
const char* layoutTip() {
  static const std::string tip(wire::kLayoutTip);  // a C string for Redis
  return tip.c_str();
}

// SWL.DECIDE's info: its tip (its keys are CreateCommand's: argv[1]).
int tellLayout(RedisModuleCommand* command) {
  RedisModuleCommandInfo info = {};
  info.version = REDISMODULE_COMMAND_INFO_VERSION;
  info.tips = layoutTip();
  return RedisModule_SetCommandInfo(command, &info);
}

// SWL.DECIDEALL's keys, counted by its first argument, as EVAL's are: declared so that Cluster sends it
// to their slot and refuses keys of several, as it does the script.
int declareCountedKeys(RedisModuleCommand* command) {
  RedisModuleCommandKeySpec specs[2] = {};  // the list ends with an empty spec
  specs[0].flags = REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_UPDATE;
  specs[0].begin_search_type = REDISMODULE_KSPEC_BS_INDEX;
  specs[0].bs.index.pos = 1;
  specs[0].find_keys_type = REDISMODULE_KSPEC_FK_KEYNUM;
  specs[0].fk.keynum.keynumidx = 0;
  specs[0].fk.keynum.firstkey = 1;
  specs[0].fk.keynum.keystep = 1;
  RedisModuleCommandInfo info = {};
  info.version = REDISMODULE_COMMAND_INFO_VERSION;
  info.arity = -(2 + 1 + static_cast<int>(decideAllArguments(1)));  // one rule at least
  info.tips = layoutTip();
  info.key_specs = specs;
  return RedisModule_SetCommandInfo(command, &info);
}

}  // namespace
}  // namespace swl::native

extern "C" int RedisModule_OnLoad(RedisModuleCtx* ctx, RedisModuleString** /*argv*/, int /*argc*/) {
  using namespace swl::native;
  if (RedisModule_Init(ctx, "swl", wire::kLayoutVersion, REDISMODULE_APIVER_1) == REDISMODULE_ERR) {
    return REDISMODULE_ERR;
  }
  if (!RedisModule_SetCommandInfo) {
    RedisModule_Log(ctx, "warning", "swl-native needs Redis 7.0 or later (RedisModule_SetCommandInfo)");
    return REDISMODULE_ERR;
  }
  RedisModuleCommand* decide = registerCommand(ctx, wire::kDecideCommand, decideCommand, 1, 1);
  if (!decide || tellLayout(decide) == REDISMODULE_ERR) return REDISMODULE_ERR;
  RedisModuleCommand* decide_all = registerCommand(ctx, wire::kDecideAllCommand, decideAllCommand, 0, 0);
  if (!decide_all || declareCountedKeys(decide_all) == REDISMODULE_ERR) return REDISMODULE_ERR;
  makeSharedWords();
  return REDISMODULE_OK;
}

extern "C" int RedisModule_OnUnload(RedisModuleCtx* /*ctx*/) {
  swl::native::freeSharedWords();
  return REDISMODULE_OK;
}
