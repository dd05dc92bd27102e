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
// One file includes redismodule.h, which defines the API's pointers: the parts it uses are headers.

#include "log.hpp"
#include "sorted_set.hpp"

#include <sys/time.h>

#include <algorithm>
#include <charconv>
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

// An integer argument, whole and in range, or a clear error naming it.
std::int64_t integerArgument(std::string_view text, std::string_view what) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value <= -kTimesEnd || value >= kTimesEnd) {
    throw CommandError("ERR swl: the " + std::string(what) + " '" + std::string(text) +
                       "' is not an integer below 2^53");
  }
  return value;
}

// Redis's own clock, as the script reads it with TIME: from Redis 7.2 on, the time Redis took when the
// command began (RedisModule_CachedMicroseconds, which 7.0 lacks); before, gettimeofday's.
std::int64_t redisTime() {
  if (RedisModule_CachedMicroseconds) return RedisModule_CachedMicroseconds();
  timeval now{};
  gettimeofday(&now, nullptr);
  return std::int64_t{now.tv_sec} * 1000000 + now.tv_usec;
}

// The clock a call decides at, from its `now` argument: '' for Redis's own; '-' and 16 digits for Redis's
// own and the call's deadline on it (0: none), checked before anything is written (the scripts' prelude).
void readClock(Request& request, std::string_view now_text) {
  std::int64_t deadline = 0;
  if (!now_text.empty() && now_text[0] < '0') {
    deadline = -integerArgument(now_text, "deadline");
    now_text = "";
  }
  request.redis_time = now_text.empty();
  request.now = request.redis_time ? redisTime() : integerArgument(now_text, "time");
  if (deadline > 0 && request.now > deadline) {
    throw CommandError("EXPIRED swl: the call ran " + std::to_string(request.now - deadline) +
                       " us past its deadline; nothing recorded");
  }
}

// A limit's window and its number, and the call's cost and the set's ttl when given, read and checked.
void readLimit(Request& request, std::string_view window, std::string_view limit, std::optional<std::string_view> cost,
               std::optional<std::string_view> ttl) {
  request.window_text = window;
  request.window = integerArgument(window, "window");
  request.limit = integerArgument(limit, "limit");
  if (request.window <= 0) throw CommandError("ERR swl: the window must be at least 1 us");
  if (cost) request.cost = integerArgument(*cost, "cost");
  if (request.cost < 0) throw CommandError("ERR swl: a cost cannot be below 0");
  if (ttl && !ttl->empty()) request.ttl = integerArgument(*ttl, "ttl");
  if (request.ttl && *request.ttl <= 0) throw CommandError("ERR swl: a ttl must be at least 1 ms");
}

// SWL.DECIDE's arguments, the log's script's ARGV (argv[1] is its key).
Request requestOf(RedisModuleString** argv, int argc) {
  const auto argument = [argv, argc](int index) -> std::optional<std::string_view> {
    if (index + 1 >= argc) return std::nullopt;  // ARGV[index] is argv[index + 1], after the key
    return textOf(argv[index + 1]);
  };
  Request request;
  readLimit(request, *argument(1), *argument(2), argument(3), argument(6));
  readClock(request, argument(4).value_or(""));
  request.member = argument(5).value_or("");
  if (argc > 6) request.member_word = argv[6];
  request.count_rejected = argument(7).value_or("") == "1";
  return request;
}

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
  if (argc < 4 || argc > 9) return RedisModule_WrongArity(ctx);
  return answering(ctx, [&] {
    const Request request = requestOf(argv, argc);
    MemoryGuard guard;
    SortedSet set(ctx, argv[1], guard);
    const Answer answer = LogDecision(set, request).decide();
    RedisModule_ReplyWithArray(ctx, 4);
    RedisModule_ReplyWithLongLong(ctx, answer.allowed);
    replyWith(ctx, answer);
  });
}

// SWL.DECIDEALL's arguments per rule, after its three shared ones (MultiLimiter's script's ARGV layout,
// kMultiWindowArguments): cost, window, limit, ttl, and how the rule counts.
constexpr std::int64_t kSharedArguments = 3;
constexpr std::int64_t kArgumentsPerRule = 5;

int decideAllCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 2) return RedisModule_WrongArity(ctx);
  return answering(ctx, [&] {
    const std::int64_t rules = integerArgument(textOf(argv[1]), "key count");
    if (rules < 1 || argc != 2 + rules + kSharedArguments + kArgumentsPerRule * rules) {
      throw CommandError(
          "ERR swl: SWL.DECIDEALL takes a key count, its keys, now, member, recording, then "
          "cost, window, limit, ttl and counting for each key: " +
          std::to_string(argc - 1) + " arguments do not fit the count " + std::to_string(rules));
    }
    RedisModuleString** keys = argv + 2;
    RedisModuleString** args = keys + rules;  // the script's ARGV[i] is args[i - 1]
    const std::string_view recording = textOf(args[2]);
    std::vector<Request> requests(static_cast<std::size_t>(rules));
    for (std::int64_t i = 0; i < rules; ++i) {
      RedisModuleString** rule = args + kSharedArguments + kArgumentsPerRule * i;
      Request& request = requests[static_cast<std::size_t>(i)];
      readLimit(request, textOf(rule[1]), textOf(rule[2]), textOf(rule[0]), textOf(rule[3]));
      if (!textOf(rule[4]).empty()) {
        throw CommandError("ERR swl: rule " + std::to_string(i + 1) +
                           " counts by periods or as a GCRA bucket, which only MultiLimiter's script decides");
      }
      readClock(request, textOf(args[0]));
      request.member = textOf(args[1]);
      request.member_word = args[1];
    }
    // A key named by two rules would be read twice before either records, and recorded twice over what
    // the first read saw: refused before anything is read.
    for (std::int64_t i = 0; i < rules; ++i) {
      for (std::int64_t j = 0; j < i; ++j) {
        if (textOf(keys[i]) == textOf(keys[j])) {
          throw CommandError("ERR swl: the key '" + std::string(textOf(keys[i])) +
                             "' is named twice; each rule takes a key of its own");
        }
      }
    }
    MemoryGuard guard;
    std::deque<SortedSet> sets;  // in place: each decision holds its set
    for (std::int64_t i = 0; i < rules; ++i) sets.emplace_back(ctx, keys[i], guard);
    std::vector<LogDecision> decisions;
    decisions.reserve(requests.size());
    bool allowed = true;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      decisions.emplace_back(sets[i], requests[i]);
      allowed = decisions.back().open() && allowed;
    }
    // Recorded in every rule, each at its own cost, or in none ('-' is a dry run).
    std::optional<std::string> member;
    if (recording != "-" && (allowed || recording == "1")) member = decisions[0].memberOrTimestamp();
    // Each rule recorded and then answered, in turn, as the script does: the reply begins only once
    // nothing can fail.
    std::vector<Answer> answers;
    for (LogDecision& decision : decisions) {
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
RedisModuleCommand* registerCommand(RedisModuleCtx* ctx, const char* name, RedisModuleCmdFunc run, int first,
                                    int last) {
  if (RedisModule_CreateCommand(ctx, name, run, "write", first, last, first == 0 ? 0 : 1) == REDISMODULE_ERR) {
    return nullptr;
  }
  RedisModuleCommand* command = RedisModule_GetCommand(ctx, name);
  if (command && RedisModule_SetCommandACLCategories &&
      RedisModule_SetCommandACLCategories(command, "write sortedset") == REDISMODULE_ERR) {
    return nullptr;
  }
  return command;
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
  info.arity = -(2 + 1 + static_cast<int>(kSharedArguments + kArgumentsPerRule));  // one rule at least
  info.key_specs = specs;
  return RedisModule_SetCommandInfo(command, &info);
}

}  // namespace
}  // namespace swl::native

extern "C" int RedisModule_OnLoad(RedisModuleCtx* ctx, RedisModuleString** /*argv*/, int /*argc*/) {
  using namespace swl::native;
  if (RedisModule_Init(ctx, "swl", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR) return REDISMODULE_ERR;
  if (!RedisModule_SetCommandInfo) {
    RedisModule_Log(ctx, "warning", "swl-native needs Redis 7.0 or later (RedisModule_SetCommandInfo)");
    return REDISMODULE_ERR;
  }
  if (!registerCommand(ctx, "swl.decide", decideCommand, 1, 1)) return REDISMODULE_ERR;
  RedisModuleCommand* decide_all = registerCommand(ctx, "swl.decideall", decideAllCommand, 0, 0);
  if (!decide_all || declareCountedKeys(decide_all) == REDISMODULE_ERR) return REDISMODULE_ERR;
  makeSharedWords();
  return REDISMODULE_OK;
}

extern "C" int RedisModule_OnUnload(RedisModuleCtx* /*ctx*/) {
  swl::native::freeSharedWords();
  return REDISMODULE_OK;
}
