// The module's all-or-nothing decision (SWL.DECIDEALL) against MultiLimiter's script, on one real
// redis-server that has loaded it: random traces of calls over one to four log rules, each rule with a key
// the script alone decides and a twin the module decides, or the script when a trace hands the call back.
// Weighted costs per rule, refusals by some rules and not others, counted refusals, dry runs, per-call
// limits and windows, clocks that step back, windows left quiet, Redis's own clock (held still by the
// test, support/frozen_clock.hpp) beside the caller's, and one-key decisions (SWL.DECIDE or the log's
// script) on the same keys between the calls. After every step both answers must be the same and every
// pair of sets the same bytes (ZRANGE WITHSCORES).

#include <catch2/catch.hpp>

#include <swl/composites/multi_limiter.hpp>

#include "support/frozen_clock.hpp"
#include "support/log_traces.hpp"
#include "support/raw_redis.hpp"
#include "support/redis_server.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using swl::test::Chances;
using swl::test::FrozenClock;
using swl::test::LogArguments;
using swl::test::OwnedReply;
using swl::test::Pipeline;
using swl::test::shown;

// How often each situation came up, printed at the end: a trace that never reaches one proves nothing of it.
struct MultiReached {
  std::int64_t calls = 0, by_module = 0, handed_to_script = 0, several_rules = 0, admitted = 0, partly_refused = 0,
               wholly_refused = 0, counted_refusals = 0, dry_runs = 0, weighted = 0, redis_clock = 0, one_key = 0,
               window_changes = 0, clock_back = 0, quiet = 0, units_sets = 0;
};

// One rule of a trace: its two keys, and the window and limit its calls take.
struct TraceRule {
  std::string script_key, module_key;
  std::int64_t window = 0, limit = 0;
};

}  // namespace

TEST_CASE("SWL.DECIDEALL answers as MultiLimiter's script does and leaves the same sets, on random traces") {
  std::int64_t now = 1700000000000000;
  swl::test::ModuleOnFrozenClock frozen(now);
  FrozenClock& clock = frozen.clock;
  Pipeline& redis = frozen.redis;
  const std::string multi_sha =
      shown(redis.command({"SCRIPT", "LOAD", std::string(swl::MultiLimiter<>::script().text())}).get());
  const swl::test::LogScripts log_scripts(redis);
  Chances random;
  // A tenth of the build's decisions (the one-key tests take the rest): each step here is a round trip of
  // its own, as the clock may move between steps.
  const std::int64_t calls = swl::test::wanted("SWL_MODULE_DECISIONS", 100000) / 10;
  const std::int64_t windows[] = {1000, 20000, 1000000, 60000000};
  const std::string ttl = "600000";  // the clocks are the test's: nothing expires while a trace runs
  MultiReached reached;
  std::int64_t trace = 0;
  while (reached.calls < calls) {
    ++trace;
    std::vector<TraceRule> rules(static_cast<std::size_t>(random.between(1, 4)));
    for (std::size_t i = 0; i < rules.size(); ++i) {
      const std::string name = std::to_string(trace) + ":" + std::to_string(i);
      rules[i] = {"script:" + name, "module:" + name, windows[random.between(0, 3)],
                  random.chance(85) ? random.between(1, 20) : random.between(21, 60)};
    }
    const int weighted_percent = static_cast<int>(random.between(0, 2) * 30);
    const int handing_percent = static_cast<int>(random.between(0, 1) * 20);
    std::string history;  // the trace's steps so far, printed when one disagrees
    const std::int64_t steps = random.between(20, 200);
    for (std::int64_t step = 0; step < steps && reached.calls < calls; ++step) {
      const std::int64_t pick = random.between(0, 99);
      const std::int64_t widest =
          std::max_element(rules.begin(), rules.end(), [](const TraceRule& a, const TraceRule& b) {
            return a.window < b.window;
          })->window;
      if (pick < 2) {
        now -= random.between(1, widest / 8 + 1);
        ++reached.clock_back;
      } else if (pick < 4) {
        now += widest + random.between(0, widest);
        ++reached.quiet;
      } else {
        now += random.between(0, 2 * rules[0].window / rules[0].limit + 1);
      }
      clock.set(now);
      const bool on_redis_clock = random.chance(25);
      const std::string now_text = on_redis_clock ? "" : std::to_string(now);
      const std::string member =
          random.chance(5) ? "" : "m:" + std::to_string(trace) + ":" + std::to_string(step);  // '': a timestamp
      std::vector<std::string> on_script, on_module;
      bool multi = true;
      if (random.chance(10)) {  // one rule's key decided alone, by the log's script and by SWL.DECIDE
        multi = false;
        const TraceRule& rule =
            rules[static_cast<std::size_t>(random.between(0, static_cast<std::int64_t>(rules.size()) - 1))];
        const LogArguments arguments{
            rule.window, rule.limit,       random.between(0, std::min<std::int64_t>(3, rule.limit)), now_text, member,
            ttl,         random.chance(15)};
        on_script = swl::test::logCall(log_scripts.decide, arguments);
        on_script[3] = rule.script_key;
        on_module = on_script;
        on_module[3] = rule.module_key;
        on_module.erase(on_module.begin(), on_module.begin() + 3);
        on_module.insert(on_module.begin(), "SWL.DECIDE");
        ++reached.one_key;
      } else {
        if (random.chance(3)) {  // a call with its own limits and windows
          for (TraceRule& rule : rules) {
            rule.window = windows[random.between(0, 3)];
            rule.limit = random.chance(85) ? random.between(1, 20) : random.between(21, 60);
          }
          ++reached.window_changes;
        }
        const std::int64_t kind = random.between(0, 99);
        const std::string recording = kind < 10 ? "1" : kind < 20 ? "-" : "0";
        on_script = {"EVALSHA", multi_sha, std::to_string(rules.size())};
        for (const TraceRule& rule : rules) on_script.push_back(rule.script_key);
        for (const std::string& word : {now_text, member, recording}) on_script.push_back(word);
        bool weighted = false;
        for (const TraceRule& rule : rules) {
          std::int64_t cost = 1;
          if (random.chance(weighted_percent)) {
            cost = random.chance(80) ? random.between(1, std::min<std::int64_t>(rule.limit, 6))
                                     : random.between(1, rule.limit);
          }
          weighted = weighted || cost > 1;
          for (const std::int64_t number : {cost, rule.window, rule.limit}) on_script.push_back(std::to_string(number));
          on_script.push_back(ttl);
          on_script.push_back("");  // a log
        }
        on_module = on_script;
        for (std::size_t i = 0; i < rules.size(); ++i) on_module[3 + i] = rules[i].module_key;
        if (!random.chance(handing_percent)) {
          on_module.erase(on_module.begin(), on_module.begin() + 2);
          on_module.insert(on_module.begin(), "SWL.DECIDEALL");
          ++reached.by_module;
        } else {
          ++reached.handed_to_script;
        }
        ++reached.calls;
        reached.several_rules += rules.size() > 1 ? 1 : 0;
        reached.counted_refusals += recording == "1" ? 1 : 0;
        reached.dry_runs += recording == "-" ? 1 : 0;
        reached.weighted += weighted ? 1 : 0;
        reached.redis_clock += on_redis_clock ? 1 : 0;
      }
      redis.send(on_script);
      redis.send(on_module);
      for (const TraceRule& rule : rules) {
        redis.send({"ZRANGE", rule.script_key, "0", "-1", "WITHSCORES"});
        redis.send({"ZRANGE", rule.module_key, "0", "-1", "WITHSCORES"});
      }
      const OwnedReply script_answer = redis.receive();
      const OwnedReply module_answer = redis.receive();
      for (const std::string& word : on_module) history += (word.size() == 40 ? "<sha>" : "'" + word + "'") + " ";
      history += "\n";
      INFO("trace " << trace << ", its steps:\n" << history);
      REQUIRE(shown(module_answer.get()) == shown(script_answer.get()));
      for (const TraceRule& rule : rules) {
        const OwnedReply script_set = redis.receive();
        const OwnedReply module_set = redis.receive();
        INFO("the sets of " << rule.module_key);
        REQUIRE(swl::test::describedLog(module_set.get()) == swl::test::describedLog(script_set.get()));
      }
      if (multi && script_answer->type == REDIS_REPLY_ARRAY) {
        std::int64_t refusing = 0;
        for (std::size_t i = 0; i < rules.size(); ++i)
          refusing += script_answer->element[2 + 3 * i]->integer > 0 ? 1 : 0;
        if (refusing == 0) {
          ++reached.admitted;
        } else if (refusing < static_cast<std::int64_t>(rules.size())) {
          ++reached.partly_refused;
        } else {
          ++reached.wholly_refused;
        }
      }
    }
    for (const TraceRule& rule : rules) {
      if (swl::test::countedByUnits(redis, rule.module_key)) ++reached.units_sets;
      redis.command({"DEL", rule.script_key, rule.module_key});
    }
  }
  std::printf(
      "SWL.DECIDEALL vs MultiLimiter's script: %lld calls in %lld traces, %lld by the module, %lld handed to the "
      "script, %lld of several rules; %lld admitted, %lld refused by some rules, %lld by all; %lld counting "
      "refusals, %lld dry runs, %lld weighted, %lld on Redis's clock; %lld one-key "
      "decisions between; %lld calls with other limits and windows, %lld clocks stepped back, %lld quiet "
      "windows; %lld rules ended counted by units\n",
      static_cast<long long>(reached.calls), static_cast<long long>(trace), static_cast<long long>(reached.by_module),
      static_cast<long long>(reached.handed_to_script), static_cast<long long>(reached.several_rules),
      static_cast<long long>(reached.admitted), static_cast<long long>(reached.partly_refused),
      static_cast<long long>(reached.wholly_refused), static_cast<long long>(reached.counted_refusals),
      static_cast<long long>(reached.dry_runs), static_cast<long long>(reached.weighted),
      static_cast<long long>(reached.redis_clock), static_cast<long long>(reached.one_key),
      static_cast<long long>(reached.window_changes), static_cast<long long>(reached.clock_back),
      static_cast<long long>(reached.quiet), static_cast<long long>(reached.units_sets));
  CHECK(reached.by_module > reached.calls / 2);
  for (const std::int64_t count :
       {reached.handed_to_script, reached.several_rules, reached.admitted, reached.partly_refused,
        reached.wholly_refused, reached.counted_refusals, reached.dry_runs, reached.weighted, reached.redis_clock,
        reached.one_key, reached.window_changes, reached.clock_back, reached.quiet, reached.units_sets}) {
    CHECK(count > 0);
  }
}
