// The module (module/, SWL.DECIDE) against swl's own script, on one real redis-server that has loaded it:
// random traces run on two keys at once, one decided by the script alone, the other by the module, or by
// the script when a trace hands the key back (a fleet upgrading one process at a time). Weighted costs,
// peeks, counted refusals, per-call limits and windows, clocks that step back, members that repeat,
// windows left quiet, and the scripts the module leaves to Lua (settling a reservation, a lease) on both
// keys alike. After every step both answers must be the same and both sets the same bytes (ZRANGE
// WITHSCORES: members and scores, in order).

#include <catch2/catch.hpp>

#include <swl/algorithms/sliding_window_log.hpp>
#include <swl/detail/script/assembly.hpp>

#include "support/raw_redis.hpp"
#include "support/redis_server.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using swl::test::OwnedReply;
using swl::test::Pipeline;
using swl::test::RedisServer;
using swl::test::sameReply;
using swl::test::shown;

// The module this build made (tests/CMakeLists.txt names it), or another one named in the environment.
std::string modulePath() {
  const char* path = std::getenv("SWL_NATIVE_MODULE");
  return path ? path : SWL_NATIVE_MODULE;
}

// How often each situation came up, printed at the end: a trace that never reaches one proves nothing of it.
struct Reached {
  std::int64_t decisions = 0, by_module = 0, handed_to_script = 0, admitted = 0, refused = 0, peeks = 0, weighted = 0,
               counted_refusals = 0, window_changes = 0, clock_back = 0, quiet = 0, repeated_members = 0, settles = 0,
               leases = 0, units_sets = 0;
};

}  // namespace

TEST_CASE("the module answers as the script does and leaves the same set, on random traces") {
  RedisServer server({"--loadmodule", modulePath()});
  Pipeline redis(server.port());
  const std::string decide_sha = shown(
      redis.command({"SCRIPT", "LOAD", std::string(swl::detail::scriptOf<swl::SlidingWindowLog>().text())}).get());
  const std::string settle_sha = shown(
      redis
          .command(
              {"SCRIPT", "LOAD",
               std::string(swl::detail::scriptOf<swl::SlidingWindowLog, swl::detail::ScriptRole::settle>().text())})
          .get());
  const std::string lease_sha = shown(
      redis
          .command({"SCRIPT", "LOAD",
                    std::string(swl::detail::scriptOf<swl::SlidingWindowLog, swl::detail::ScriptRole::lease>().text())})
          .get());

  std::mt19937_64 random(swl::test::wanted("SWL_MODULE_SEED", 53));
  const auto between = [&random](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  const auto chance = [&between](int percent) { return between(0, 99) < percent; };
  // Three quarters of the build's decisions here; the rest on Redis's own clock (test_module_clock.cpp).
  const std::int64_t decisions = swl::test::wanted("SWL_MODULE_DECISIONS", 100000) * 3 / 4;
  const std::int64_t windows[] = {1000, 20000, 1000000, 60000000};
  // The clock is the test's, far from Redis's: keys must not expire while a trace runs on them.
  const std::string kTtl = "600000", kLongerTtl = "600001";
  Reached reached;
  std::int64_t trace = 0;
  while (reached.decisions < decisions) {
    ++trace;
    const std::string by_script = "script:" + std::to_string(trace);
    const std::string by_module = "module:" + std::to_string(trace);
    std::int64_t window = windows[between(0, 3)];
    std::int64_t limit = chance(85) ? between(1, 20) : between(21, 120);
    const int weighted_percent = static_cast<int>(between(0, 2) * 30);  // traces of one unit, some, many
    const int handing_percent = static_cast<int>(between(0, 1) * 20);
    std::int64_t now = 1700000000000000 + trace * 10000000000;
    std::vector<std::pair<std::string, std::int64_t>> recorded;  // members admitted, with their cost
    const std::int64_t steps = between(20, 400);
    // A trace's steps go out 32 at a time, each as four commands (the script's call, the module's or the
    // script's, both sets whole), and are checked as their replies come back.
    struct Sent {
      std::vector<std::string> on_module;
      bool decision = false;
      bool module_decides = false;
      bool peek = false;
    };
    std::vector<Sent> in_flight;
    const auto checkInFlight = [&] {
      for (const Sent& sent : in_flight) {
        const OwnedReply script_answer = redis.receive();
        const OwnedReply module_answer = redis.receive();
        const OwnedReply script_set = redis.receive();
        const OwnedReply module_set = redis.receive();
        const bool same_sets = sameReply(script_set.get(), module_set.get());
        if (!sameReply(module_answer.get(), script_answer.get()) || !same_sets) {
          std::string call;
          for (const std::string& word : sent.on_module) call += (word.size() == 40 ? "<sha>" : "'" + word + "'") + " ";
          FAIL("trace " << trace << ": " << call << "\n  the module's key answered " << shown(module_answer.get())
                        << ", the script's " << shown(script_answer.get()) << (same_sets ? "" : "; the sets differ")
                        << "; the sets after:\n  script: " << swl::test::describedLog(script_set.get())
                        << "\n  module: " << swl::test::describedLog(module_set.get()));
        }
        if (sent.decision) {
          ++reached.decisions;
          reached.by_module += sent.module_decides ? 1 : 0;
          reached.handed_to_script += sent.module_decides ? 0 : 1;
          if (script_answer->type == REDIS_REPLY_ARRAY && !sent.peek) {
            (script_answer->element[0]->integer == 1 ? reached.admitted : reached.refused) += 1;
          }
        }
      }
      in_flight.clear();
    };
    for (std::int64_t step = 0;
         step < steps && reached.decisions + static_cast<std::int64_t>(in_flight.size()) < decisions; ++step) {
      // The clock: mostly forward by about the window's share of one request; sometimes back (a client's
      // clock behind another's), sometimes past the whole window (a key left quiet).
      const std::int64_t pick = between(0, 99);
      if (pick < 3) {
        now -= between(1, window / 4 + 1);
        ++reached.clock_back;
      } else if (pick < 5) {
        now += window + between(0, window);
        ++reached.quiet;
      } else {
        now += between(0, 2 * window / limit + 1);
      }
      if (chance(2)) {  // a call with its own limit and window
        window = windows[between(0, 3)];
        limit = chance(85) ? between(1, 20) : between(21, 120);
        ++reached.window_changes;
      }
      const std::int64_t kind = between(0, 99);
      std::vector<std::string> call;
      bool peek = false;
      if (kind < 4 && !recorded.empty()) {  // settle a reservation, on both keys, by the script
        const auto& [member, cost] =
            recorded[static_cast<std::size_t>(between(0, static_cast<std::int64_t>(recorded.size()) - 1))];
        const std::int64_t actual = between(0, cost + 3);
        call = {"EVALSHA",
                settle_sha,
                "1",
                "",
                std::to_string(window),
                std::to_string(limit),
                std::to_string(actual),
                std::to_string(now),
                member,
                kTtl,
                "0",
                std::to_string(cost)};
        ++reached.settles;
      } else if (kind < 7) {  // a lease, by the script
        const std::int64_t cost = between(1, limit);
        const std::string member = "lease:" + std::to_string(trace) + ":" + std::to_string(step);
        call = {"EVALSHA",
                lease_sha,
                "1",
                "",
                std::to_string(window),
                std::to_string(limit),
                std::to_string(cost),
                std::to_string(now),
                member,
                kTtl,
                "0",
                std::to_string(between(cost, limit)),
                std::to_string(between(1, window / 4 + 1)),
                "2",
                "",
                "0",
                "0"};
        ++reached.leases;
      } else {
        peek = chance(5);
        std::int64_t cost = peek ? 0 : 1;
        if (!peek && chance(weighted_percent))
          cost = chance(90) ? between(1, std::min<std::int64_t>(limit, 8)) : between(1, limit);
        std::string member = "m:" + std::to_string(trace) + ":" + std::to_string(step);
        if (chance(5)) member = "";  // the millisecond timestamp, which repeats within a millisecond
        if (chance(3) && !recorded.empty()) {
          member = recorded[static_cast<std::size_t>(between(0, static_cast<std::int64_t>(recorded.size()) - 1))].first;
          ++reached.repeated_members;
        }
        const bool count_rejected = chance(15);
        call = {"EVALSHA",
                decide_sha,
                "1",
                "",
                std::to_string(window),
                std::to_string(limit),
                std::to_string(cost),
                std::to_string(now),
                member,
                chance(50) ? kTtl : kLongerTtl,
                count_rejected ? "1" : "0"};
        reached.peeks += peek ? 1 : 0;
        reached.weighted += cost > 1 ? 1 : 0;
        reached.counted_refusals += count_rejected ? 1 : 0;
        if (!member.empty() && cost > 0) recorded.emplace_back(member, cost);
      }
      Sent sent;
      sent.decision = call[1] == decide_sha;
      sent.module_decides = sent.decision && !chance(handing_percent);
      sent.peek = peek;
      // The script's call on one key; on the other the module's (SWL.DECIDE key ARGV...) or the same.
      call[3] = by_script;
      redis.send(call);
      call[3] = by_module;
      if (sent.module_decides) {
        call.erase(call.begin(), call.begin() + 3);
        call.insert(call.begin(), "SWL.DECIDE");
      }
      redis.send(call);
      redis.send({"ZRANGE", by_script, "0", "-1", "WITHSCORES"});
      redis.send({"ZRANGE", by_module, "0", "-1", "WITHSCORES"});
      sent.on_module = std::move(call);
      in_flight.push_back(std::move(sent));
      if (in_flight.size() == 32) checkInFlight();
    }
    checkInFlight();
    const OwnedReply first = redis.command({"ZRANGE", by_module, "0", "0"});
    if (first->elements == 1 && first->element[0]->len > 0 && first->element[0]->str[0] == '#') ++reached.units_sets;
    // Both keys expire: the module sets the ttl as the script does.
    const OwnedReply script_ttl = redis.command({"PTTL", by_script});
    const OwnedReply module_ttl = redis.command({"PTTL", by_module});
    INFO("trace " << trace << ": the script's key expires in " << script_ttl->integer << " ms, the module's in "
                  << module_ttl->integer);
    REQUIRE((module_ttl->integer > 0) == (script_ttl->integer > 0));
    redis.command({"DEL", by_script, by_module});
  }
  std::printf(
      "module vs script: %lld decisions in %lld traces, %lld by the module, %lld handed to the script; %lld "
      "admitted, %lld refused, %lld peeks, %lld weighted, %lld that count refusals; %lld calls with another "
      "limit and window, %lld clocks stepped back, %lld quiet windows, %lld repeated members, %lld settles, "
      "%lld leases; %lld traces ended counted by units\n",
      static_cast<long long>(reached.decisions), static_cast<long long>(trace),
      static_cast<long long>(reached.by_module), static_cast<long long>(reached.handed_to_script),
      static_cast<long long>(reached.admitted), static_cast<long long>(reached.refused),
      static_cast<long long>(reached.peeks), static_cast<long long>(reached.weighted),
      static_cast<long long>(reached.counted_refusals), static_cast<long long>(reached.window_changes),
      static_cast<long long>(reached.clock_back), static_cast<long long>(reached.quiet),
      static_cast<long long>(reached.repeated_members), static_cast<long long>(reached.settles),
      static_cast<long long>(reached.leases), static_cast<long long>(reached.units_sets));
  CHECK(reached.by_module > reached.decisions / 2);
  CHECK(reached.refused > 0);
  CHECK(reached.units_sets > 0);
}
