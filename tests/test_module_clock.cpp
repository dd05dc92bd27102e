// The module against swl's script on Redis's own clock, where the script takes its fast path and trusts the
// clock to have moved on: the server's wall clock is held still at a time this test sets
// (support/frozen_clock.cpp), and stepped by it, so that the two keys' calls of one step read the same
// microsecond.
// Decisions on Redis's clock (the whole prelude, the three-argument call that other tools make, a deadline
// on each side of the clock), refusals, peeks and weighted costs, the script's settles and leases on both
// keys, and keys handed to the script; after every step, the same answers and the same sets.

#include <catch2/catch.hpp>

#include "support/frozen_clock.hpp"
#include "support/log_traces.hpp"
#include "support/raw_redis.hpp"
#include "support/redis_server.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

using swl::test::Chances;
using swl::test::FrozenClock;
using swl::test::LogArguments;
using swl::test::LogScripts;
using swl::test::OwnedReply;
using swl::test::Pipeline;
using swl::test::shown;
using swl::test::StepReplies;

}  // namespace

TEST_CASE("on Redis's own clock the module answers as the script does, fast path and deadlines too") {
  std::int64_t now = 1700000000000000;
  swl::test::ModuleOnFrozenClock frozen(now);
  FrozenClock& clock = frozen.clock;
  Pipeline& redis = frozen.redis;
  REQUIRE(swl::test::redisTime(redis) == now);  // the server reads the clock this test sets
  const LogScripts scripts(redis);
  Chances random;
  // A quarter of the build's decisions (test_module_log.cpp takes the rest): a step here is a round trip of its
  // own, since the clock moves between steps.
  const std::int64_t decisions = swl::test::wanted("SWL_MODULE_DECISIONS", 100000) / 4;
  const std::int64_t windows[] = {1000, 20000, 1000000, 60000000};
  const std::string ttl = "600000";  // the clock is frozen: nothing expires while the test runs
  std::int64_t made = 0, by_module = 0, admitted = 0, refused = 0, short_calls = 0, expired = 0, on_time = 0,
               same_microsecond = 0, clock_back = 0, settles = 0, leases = 0, traces = 0;
  while (made < decisions) {
    ++traces;
    const std::string by_script = "script:" + std::to_string(traces);
    const std::string by_module_key = "module:" + std::to_string(traces);
    std::int64_t window = windows[random.between(0, 3)];
    std::int64_t limit = random.chance(85) ? random.between(1, 20) : random.between(21, 120);
    const int weighted_percent = static_cast<int>(random.between(0, 2) * 20);
    const int handing_percent = static_cast<int>(random.between(0, 1) * 20);
    std::vector<std::pair<std::string, std::int64_t>> recorded;
    std::string history;  // the trace's steps so far, printed when one disagrees
    const std::int64_t steps = random.between(20, 300);
    for (std::int64_t step = 0; step < steps && made < decisions; ++step) {
      const std::int64_t pick = random.between(0, 99);
      if (pick < 1) {
        now -= random.between(1, window / 4 + 1);  // the clock stepped back (NTP)
        ++clock_back;
      } else if (pick < 6) {
        ++same_microsecond;  // two calls in one microsecond
      } else if (pick < 8) {
        now += window + random.between(0, window);
      } else {
        now += random.between(1, 2 * window / limit + 1);
      }
      clock.set(now);
      if (random.chance(2)) {
        window = windows[random.between(0, 3)];
        limit = random.chance(85) ? random.between(1, 20) : random.between(21, 120);
      }
      LogArguments arguments{window, limit, 1, "", "", ttl, false};  // on Redis's clock
      const std::int64_t kind = random.between(0, 99);
      bool decision = false;
      bool peek = false;
      std::vector<std::string> call;
      if (kind < 4 && !recorded.empty()) {
        const auto& [member, cost] = random.anyOf(recorded);
        arguments.cost = random.between(0, cost + 3);
        arguments.member = member;
        call = swl::test::settleCall(scripts, arguments, cost);
        ++settles;
      } else if (kind < 7) {
        arguments.cost = random.between(1, limit);
        arguments.member = "lease:" + std::to_string(traces) + ":" + std::to_string(step);
        call = swl::test::leaseCall(scripts, arguments, random.between(arguments.cost, limit),
                                    random.between(1, window / 4 + 1));
        ++leases;
      } else {
        decision = true;
        peek = random.chance(5);
        arguments.cost = peek ? 0 : 1;
        if (!peek && random.chance(weighted_percent))
          arguments.cost = random.between(1, std::min<std::int64_t>(limit, 8));
        arguments.member = "m:" + std::to_string(traces) + ":" + std::to_string(step);
        // The millisecond timestamp: a member that repeats within a millisecond, in sets counted by
        // entries and by units alike (the fast path leaves it to the whole script).
        const bool timestamp_member = random.chance(5);
        if (timestamp_member) arguments.member = "";
        if (random.chance(5)) {
          // a deadline on Redis's clock: passed by a microsecond, reached, or ahead
          const std::int64_t deadline = now + random.between(-1, 1);
          char text[24];
          std::snprintf(text, sizeof text, "-%016lld", static_cast<long long>(deadline));
          arguments.now = text;
          (deadline < now ? expired : on_time) += 1;
        }
        arguments.count_rejected = random.chance(15);
        call = swl::test::logCall(scripts.decide, arguments);
        if (timestamp_member && arguments.now.empty() && random.chance(50)) {
          call.resize(7);  // the first three arguments alone: Redis's clock, the timestamp member, the window's ttl
          ++short_calls;
        }
        if (!arguments.member.empty() && arguments.cost > 0) recorded.emplace_back(arguments.member, arguments.cost);
      }
      const bool module_decides = decision && !random.chance(handing_percent);
      const std::vector<std::string> sent =
          swl::test::sendStep(redis, std::move(call), by_script, by_module_key, module_decides);
      const StepReplies replies(redis);
      const std::string words = swl::test::describedCall(sent, scripts);
      if (!replies.agree()) {
        FAIL("the trace so far:" << history << "\ntrace " << traces << ", step " << step << " at " << now << ": "
                                 << words << "\n  " << replies.disagreement());
      }
      history += "\n  at " + std::to_string(now) + ": " + words + "-> " + shown(replies.script_answer.get());
      if (decision) {
        ++made;
        by_module += module_decides ? 1 : 0;
        if (!peek) (replies.admitted() ? admitted : refused) += 1;
      }
    }
    redis.command({"DEL", by_script, by_module_key});
  }
  std::printf(
      "module vs script on Redis's clock: %lld decisions in %lld traces, %lld by the module; %lld admitted, "
      "%lld refused; %lld three-argument calls; deadlines: %lld passed, %lld not; %lld "
      "steps in the same microsecond, %lld clocks stepped back; %lld settles, %lld leases\n",
      static_cast<long long>(made), static_cast<long long>(traces), static_cast<long long>(by_module),
      static_cast<long long>(admitted), static_cast<long long>(refused), static_cast<long long>(short_calls),
      static_cast<long long>(expired), static_cast<long long>(on_time), static_cast<long long>(same_microsecond),
      static_cast<long long>(clock_back), static_cast<long long>(settles), static_cast<long long>(leases));
  for (const std::int64_t count : {by_module, made - by_module, admitted, refused, short_calls, expired, on_time,
                                   same_microsecond, clock_back, settles, leases}) {
    CHECK(count > 0);
  }
}

TEST_CASE(
    "a call without a member on Redis's clock decides as the same call on the caller's clock, its timestamp repeated "
    "in a set counted by units") {
  std::int64_t now = 1700000000000000;
  swl::test::ModuleOnFrozenClock frozen(now);
  FrozenClock& clock = frozen.clock;
  Pipeline& redis = frozen.redis;
  const LogScripts scripts(redis);
  // Each of the script and the module decides two keys: one on Redis's clock (where the fast path may
  // answer), one on the caller's clock at the same microsecond (which it never does).
  struct Step {
    std::int64_t cost;
    std::int64_t advance_us;
  };
  // Entries in one millisecond, a weighted call that makes the set count units, then the same
  // millisecond's timestamp again, across enough calls that some land on a trimming microsecond, and a
  // window later, when the first entries have slid out.
  std::vector<Step> steps{{1, 0}, {1, 3}, {2, 5}, {1, 1}, {1, 1}};
  for (int i = 0; i < 40; ++i) steps.push_back({1, 1 + i % 3});
  steps.push_back({1, 60000000 - 200});
  for (int i = 0; i < 40; ++i) steps.push_back({1 + i % 2, 7});
  for (const bool by_module : {false, true}) {
    const std::string on_redis = by_module ? "module:redis" : "script:redis";
    const std::string on_caller = by_module ? "module:caller" : "script:caller";
    std::int64_t at = now;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      at += steps[i].advance_us;
      clock.set(at);
      const auto call = [&](const std::string& key, const std::string& time) {
        std::vector<std::string> words =
            swl::test::logCall(scripts.decide, {60000000, 50, steps[i].cost, time, "", "600000", false});
        words[3] = key;
        if (by_module) {
          words.erase(words.begin(), words.begin() + 3);
          words.insert(words.begin(), "SWL.DECIDE");
        }
        return redis.command(words);
      };
      const OwnedReply redis_clock = call(on_redis, "");
      const OwnedReply caller_clock = call(on_caller, std::to_string(at));
      INFO((by_module ? "module" : "script") << ", step " << i << " at " << at);
      REQUIRE(shown(redis_clock.get()) == shown(caller_clock.get()));
      REQUIRE(swl::test::describedLog(redis.command({"ZRANGE", on_redis, "0", "-1", "WITHSCORES"}).get()) ==
              swl::test::describedLog(redis.command({"ZRANGE", on_caller, "0", "-1", "WITHSCORES"}).get()));
    }
  }
}
