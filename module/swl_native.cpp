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
// One file includes redismodule.h, which defines the API's pointers: the parts it uses are headers.

#include "log.hpp"
#include "sorted_set.hpp"

#include <sys/time.h>

#include <charconv>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

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

// The script's prelude: its arguments read, the clock, and the deadline checked before anything is written.
Request requestOf(RedisModuleString** argv, int argc) {
  const auto argument = [argv, argc](int index) -> std::optional<std::string_view> {
    if (index + 1 >= argc) return std::nullopt;  // ARGV[index] is argv[index + 1], after the key
    return textOf(argv[index + 1]);
  };
  Request request;
  request.window_text = *argument(1);
  request.window = integerArgument(request.window_text, "window");
  request.limit = integerArgument(*argument(2), "limit");
  if (request.window <= 0) throw CommandError("ERR swl: the window must be at least 1 us");
  if (const auto cost = argument(3)) request.cost = integerArgument(*cost, "cost");
  if (request.cost < 0) throw CommandError("ERR swl: a cost cannot be below 0");
  std::int64_t deadline = 0;
  std::string_view now_text = argument(4).value_or("");
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
  request.member = argument(5).value_or("");
  if (const auto ttl = argument(6); ttl && !ttl->empty()) request.ttl = integerArgument(*ttl, "ttl");
  if (request.ttl && *request.ttl <= 0) throw CommandError("ERR swl: a ttl must be at least 1 ms");
  request.count_rejected = argument(7).value_or("") == "1";
  return request;
}

int decideCommand(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  if (argc < 4 || argc > 9) return RedisModule_WrongArity(ctx);
  try {
    const Request request = requestOf(argv, argc);
    SortedSet set(ctx, argv[1]);
    const Answer answer = LogDecision(set, request).decide();
    RedisModule_ReplyWithArray(ctx, 4);
    for (const std::int64_t value : {answer.allowed, answer.remaining, answer.retry_after, answer.reset_after}) {
      RedisModule_ReplyWithLongLong(ctx, value);
    }
  } catch (const CommandError& error) {
    RedisModule_ReplyWithError(ctx, error.what());
  } catch (const std::exception& error) {
    RedisModule_ReplyWithError(ctx, (std::string("ERR swl: ") + error.what()).c_str());
  }
  return REDISMODULE_OK;
}

}  // namespace
}  // namespace swl::native

extern "C" int RedisModule_OnLoad(RedisModuleCtx* ctx, RedisModuleString** /*argv*/, int /*argc*/) {
  if (RedisModule_Init(ctx, "swl", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR) return REDISMODULE_ERR;
  swl::native::makeSharedWords();
  // Not deny-oom: like the script, a decision that writes nothing (a refusal, a peek) is answered over
  // maxmemory, and one that writes is refused before its first write (MemoryGuard).
  if (RedisModule_CreateCommand(ctx, "swl.decide", swl::native::decideCommand, "write", 1, 1, 1) == REDISMODULE_ERR) {
    return REDISMODULE_ERR;
  }
  // ACL categories for the command (Redis 7.2+; an older server goes without them)
  if (RedisModule_SetCommandACLCategories) {
    RedisModuleCommand* command = RedisModule_GetCommand(ctx, "swl.decide");
    if (command && RedisModule_SetCommandACLCategories(command, "write sortedset") == REDISMODULE_ERR) {
      return REDISMODULE_ERR;
    }
  }
  return REDISMODULE_OK;
}

extern "C" int RedisModule_OnUnload(RedisModuleCtx* /*ctx*/) {
  swl::native::freeSharedWords();
  return REDISMODULE_OK;
}
