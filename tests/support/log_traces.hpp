#pragma once
// What the module's two differential tests share (test_module_log.cpp on the test's clock,
// test_module_clock.cpp on Redis's): the log's scripts loaded, a trace's random choices, its calls laid out
// once, and a step sent to both keys and read back: the script's call on one key, the same call (or the
// module's SWL.DECIDE) on the other, then both sets whole.

#include <swl/algorithms/sliding_window_log.hpp>
#include <swl/detail/script/assembly.hpp>

#include "raw_redis.hpp"
#include "wanted.hpp"

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace swl::test {

// The module this build made (tests/CMakeLists.txt names it in SWL_NATIVE_MODULE), or another one that
// the environment variable of that name names.
inline std::string modulePath() {
  const char* path = std::getenv("SWL_NATIVE_MODULE");
  return path ? path : SWL_NATIVE_MODULE;
}

// The SHA-1s of the log's three scripts, loaded into the server `redis` reaches.
struct LogScripts {
  explicit LogScripts(Pipeline& redis)
      : decide(load(redis, swl::detail::scriptOf<swl::SlidingWindowLog>().text())),
        settle(load(redis, swl::detail::scriptOf<swl::SlidingWindowLog, swl::detail::ScriptRole::settle>().text())),
        lease(load(redis, swl::detail::scriptOf<swl::SlidingWindowLog, swl::detail::ScriptRole::lease>().text())) {}

  std::string decide, settle, lease;

  // A script's SHA-1 by the script's name, for messages.
  std::string nameOf(const std::string& word) const {
    if (word == decide) return "<decide>";
    if (word == settle) return "<settle>";
    if (word == lease) return "<lease>";
    return "'" + word + "'";
  }

 private:
  static std::string load(Pipeline& redis, std::string_view text) {
    return shown(redis.command({"SCRIPT", "LOAD", std::string(text)}).get());
  }
};

// A trace's random choices, from a seed the environment may set (SWL_MODULE_SEED).
class Chances {
 public:
  Chances() : random_(static_cast<std::uint64_t>(wanted("SWL_MODULE_SEED", 53))) {}
  std::int64_t between(std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random_);
  }
  bool chance(int percent) { return between(0, 99) < percent; }
  template <class T>
  const T& anyOf(const std::vector<T>& items) {
    return items[static_cast<std::size_t>(between(0, static_cast<std::int64_t>(items.size()) - 1))];
  }

 private:
  std::mt19937_64 random_;
};

// The arguments every call of the log's scripts takes, as the prelude reads them (ARGV[1..7]).
struct LogArguments {
  std::int64_t window = 0;
  std::int64_t limit = 0;
  std::int64_t cost = 1;
  std::string now;  // '' for Redis's clock
  std::string member;
  std::string ttl;
  bool count_rejected = false;
};

// EVALSHA sha 1 <key> ARGV..., its key left empty (onKeys fills it) and `own` after the prelude's arguments.
inline std::vector<std::string> logCall(const std::string& sha, const LogArguments& arguments,
                                        std::vector<std::string> own = {}) {
  std::vector<std::string> call{"EVALSHA",
                                sha,
                                "1",
                                "",
                                std::to_string(arguments.window),
                                std::to_string(arguments.limit),
                                std::to_string(arguments.cost),
                                arguments.now,
                                arguments.member,
                                arguments.ttl,
                                arguments.count_rejected ? "1" : "0"};
  for (std::string& word : own) call.push_back(std::move(word));
  return call;
}
// Settling the entry `arguments.member` recorded with `recorded` units, now holding `arguments.cost`.
inline std::vector<std::string> settleCall(const LogScripts& scripts, const LogArguments& arguments,
                                           std::int64_t recorded) {
  return logCall(scripts.settle, arguments, {std::to_string(recorded)});
}
// A lease of `arguments.cost` units and up to `wanted` in all, for `duration` us, no previous lease.
inline std::vector<std::string> leaseCall(const LogScripts& scripts, const LogArguments& arguments, std::int64_t wanted,
                                          std::int64_t duration) {
  return logCall(scripts.lease, arguments, {std::to_string(wanted), std::to_string(duration), "2", "", "0", "0"});
}

// One step of a trace, sent: `call` (an EVALSHA with its key left empty) on the script's key, and on the
// module's key the same, or, when `by_module`, SWL.DECIDE with the same key and ARGV; then both sets whole.
// Returns the call as the module's key got it.
inline std::vector<std::string> sendStep(Pipeline& redis, std::vector<std::string> call, const std::string& script_key,
                                         const std::string& module_key, bool by_module) {
  call[3] = script_key;
  redis.send(call);
  call[3] = module_key;
  if (by_module) {
    call.erase(call.begin(), call.begin() + 3);
    call.insert(call.begin(), "SWL.DECIDE");
  }
  redis.send(call);
  redis.send({"ZRANGE", script_key, "0", "-1", "WITHSCORES"});
  redis.send({"ZRANGE", module_key, "0", "-1", "WITHSCORES"});
  return call;
}

// A step's replies, read back in the order sendStep sent them.
struct StepReplies {
  explicit StepReplies(Pipeline& redis)
      : script_answer(redis.receive()),
        module_answer(redis.receive()),
        script_set(redis.receive()),
        module_set(redis.receive()) {}

  bool agree() const {
    return sameReply(module_answer.get(), script_answer.get()) && sameReply(script_set.get(), module_set.get());
  }
  // What differed, for a failure's message.
  std::string disagreement() const {
    return "the module's key answered " + shown(module_answer.get()) + ", the script's " + shown(script_answer.get()) +
           "; the sets after:\n  script: " + describedLog(script_set.get()) +
           "\n  module: " + describedLog(module_set.get());
  }
  // Whether the script's key admitted the call.
  bool admitted() const { return script_answer->type == REDIS_REPLY_ARRAY && script_answer->element[0]->integer == 1; }

  OwnedReply script_answer, module_answer, script_set, module_set;
};

// Whether the log at `key` is counted by units: its lowest member is the bookkeeping member ('#').
inline bool countedByUnits(Pipeline& redis, const std::string& key) {
  const OwnedReply first = redis.command({"ZRANGE", key, "0", "0"});
  return first->elements == 1 && first->element[0]->len > 0 && first->element[0]->str[0] == '#';
}

// A call as a failure's message prints it, each script's SHA-1 by the script's name.
inline std::string describedCall(const std::vector<std::string>& call, const LogScripts& scripts) {
  std::string words;
  for (const std::string& word : call) words += scripts.nameOf(word) + " ";
  return words;
}

}  // namespace swl::test
