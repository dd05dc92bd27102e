// The module (module/, SWL.DECIDE) against swl's own script, on one real redis-server that has loaded it:
// random traces run on two keys at once, one decided by the script alone, the other by the module, or by
// the script when a trace hands the key back (a fleet upgrading one process at a time). Weighted costs,
// peeks, counted refusals, per-call limits and windows, clocks that step back, members that repeat,
// windows left quiet, and the scripts the module leaves to Lua (settling a reservation, a lease) on both
// keys alike. After every step both answers must be the same and both sets the same bytes (ZRANGE
// WITHSCORES: members and scores, in order).

#include <catch2/catch.hpp>

#include "../module/log/layout.hpp"
#include "../module/log/set.hpp"
#include "support/log_traces.hpp"
#include "support/raw_redis.hpp"
#include "support/redis_server.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

using swl::test::Chances;
using swl::test::LogArguments;
using swl::test::LogScripts;
using swl::test::OwnedReply;
using swl::test::Pipeline;
using swl::test::RedisServer;
using swl::test::StepReplies;

// How often each situation came up, printed at the end: a trace that never reaches one proves nothing of it.
struct Reached {
  std::int64_t decisions = 0, by_module = 0, handed_to_script = 0, admitted = 0, refused = 0, peeks = 0, weighted = 0,
               counted_refusals = 0, window_changes = 0, clock_back = 0, quiet = 0, repeated_members = 0, settles = 0,
               leases = 0, units_sets = 0;
};

}  // namespace

TEST_CASE("the module answers as the script does and leaves the same set, on random traces") {
  RedisServer server({"--loadmodule", swl::test::modulePath()});
  Pipeline redis(server.port());
  const LogScripts scripts(redis);
  Chances random;
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
    std::int64_t window = windows[random.between(0, 3)];
    std::int64_t limit = random.chance(85) ? random.between(1, 20) : random.between(21, 120);
    const int weighted_percent = static_cast<int>(random.between(0, 2) * 30);  // traces of one unit, some, many
    const int handing_percent = static_cast<int>(random.between(0, 1) * 20);
    std::int64_t now = 1700000000000000 + trace * 10000000000;
    std::vector<std::pair<std::string, std::int64_t>> recorded;  // members admitted, with their cost
    const std::int64_t steps = random.between(20, 400);
    // A trace's steps go out 32 at a time (sendStep), and are checked as their replies come back.
    struct Sent {
      std::vector<std::string> on_module;
      bool decision = false;
      bool module_decides = false;
      bool peek = false;
    };
    std::vector<Sent> in_flight;
    const auto checkInFlight = [&] {
      for (const Sent& sent : in_flight) {
        const StepReplies replies(redis);
        if (!replies.agree()) {
          FAIL("trace " << trace << ": " << swl::test::describedCall(sent.on_module, scripts) << "\n  "
                        << replies.disagreement());
        }
        if (sent.decision) {
          ++reached.decisions;
          reached.by_module += sent.module_decides ? 1 : 0;
          reached.handed_to_script += sent.module_decides ? 0 : 1;
          if (!sent.peek) (replies.admitted() ? reached.admitted : reached.refused) += 1;
        }
      }
      in_flight.clear();
    };
    for (std::int64_t step = 0;
         step < steps && reached.decisions + static_cast<std::int64_t>(in_flight.size()) < decisions; ++step) {
      // The clock: mostly forward by about the window's share of one request; sometimes back (a client's
      // clock behind another's), sometimes past the whole window (a key left quiet).
      const std::int64_t pick = random.between(0, 99);
      if (pick < 3) {
        now -= random.between(1, window / 4 + 1);
        ++reached.clock_back;
      } else if (pick < 5) {
        now += window + random.between(0, window);
        ++reached.quiet;
      } else {
        now += random.between(0, 2 * window / limit + 1);
      }
      if (random.chance(2)) {  // a call with its own limit and window
        window = windows[random.between(0, 3)];
        limit = random.chance(85) ? random.between(1, 20) : random.between(21, 120);
        ++reached.window_changes;
      }
      LogArguments arguments{window, limit, 1, std::to_string(now), "", kTtl, false};
      Sent sent;
      const std::int64_t kind = random.between(0, 99);
      std::vector<std::string> call;
      if (kind < 4 && !recorded.empty()) {  // settle a reservation, on both keys, by the script
        const auto& [member, cost] = random.anyOf(recorded);
        arguments.cost = random.between(0, cost + 3);
        arguments.member = member;
        call = swl::test::settleCall(scripts, arguments, cost);
        ++reached.settles;
      } else if (kind < 7) {  // a lease, by the script
        arguments.cost = random.between(1, limit);
        arguments.member = "lease:" + std::to_string(trace) + ":" + std::to_string(step);
        call = swl::test::leaseCall(scripts, arguments, random.between(arguments.cost, limit),
                                    random.between(1, window / 4 + 1));
        ++reached.leases;
      } else {
        sent.decision = true;
        sent.peek = random.chance(5);
        arguments.cost = sent.peek ? 0 : 1;
        if (!sent.peek && random.chance(weighted_percent)) {
          arguments.cost =
              random.chance(90) ? random.between(1, std::min<std::int64_t>(limit, 8)) : random.between(1, limit);
        }
        arguments.member = "m:" + std::to_string(trace) + ":" + std::to_string(step);
        if (random.chance(5)) arguments.member = "";  // the millisecond timestamp, which repeats within a millisecond
        if (random.chance(3) && !recorded.empty()) {
          arguments.member = random.anyOf(recorded).first;
          ++reached.repeated_members;
        }
        if (random.chance(50)) arguments.ttl = kLongerTtl;
        arguments.count_rejected = random.chance(15);
        call = swl::test::logCall(scripts.decide, arguments);
        reached.peeks += sent.peek ? 1 : 0;
        reached.weighted += arguments.cost > 1 ? 1 : 0;
        reached.counted_refusals += arguments.count_rejected ? 1 : 0;
        if (!arguments.member.empty() && arguments.cost > 0) recorded.emplace_back(arguments.member, arguments.cost);
      }
      sent.module_decides = sent.decision && !random.chance(handing_percent);
      sent.on_module = swl::test::sendStep(redis, std::move(call), by_script, by_module, sent.module_decides);
      in_flight.push_back(std::move(sent));
      if (in_flight.size() == 32) checkInFlight();
    }
    checkInFlight();
    if (swl::test::countedByUnits(redis, by_module)) ++reached.units_sets;
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
  for (const std::int64_t count :
       {reached.handed_to_script, reached.admitted, reached.refused, reached.peeks, reached.weighted,
        reached.counted_refusals, reached.window_changes, reached.clock_back, reached.quiet, reached.repeated_members,
        reached.settles, reached.leases, reached.units_sets}) {
    CHECK(count > 0);
  }
}

// The module walks to a rank near the window's start, and counts a set's entries from its bookkeeping,
// where the reads above would ask Redis's ZRANGE or ZCOUNT (module/redis/sorted_set.hpp): both matter only in sets
// of hundreds of members, which the traces above seldom build. Here every trace fills a window of 300 to
// 2,000 units, then lets parts of it slide out while it decides, so that the window's start lies deep
// inside the set, and weighted entries keep more sums than a walk passes.
TEST_CASE("the module answers as the script does on windows of hundreds of entries read deep inside") {
  RedisServer server({"--loadmodule", swl::test::modulePath()});
  Pipeline redis(server.port());
  const LogScripts scripts(redis);
  Chances random;
  const std::int64_t steps_wanted = swl::test::wanted("SWL_MODULE_DECISIONS", 100000) / 25;
  const std::string kTtl = "600000";
  const std::string times_end = std::to_string(swl::native::kTimesEnd);  // entries below, sums above
  // How often each situation came up.
  std::int64_t steps = 0, traces = 0, admitted = 0, refused = 0, weighted = 0, deep_start = 0, many_sums = 0,
               units_sets = 0, settles = 0, leases = 0;
  while (steps < steps_wanted) {
    ++traces;
    const std::string by_script = "script:deep:" + std::to_string(traces);
    const std::string by_module = "module:deep:" + std::to_string(traces);
    const std::int64_t window = random.chance(50) ? 1000000 : 60000000;
    // The kinds in turn: weighted entries enough to keep more sums than a walk passes (entries of 1 or 2
    // units, 16 to a sum); some weighted; one unit each.
    const std::int64_t kind = traces % 3;
    const std::int64_t limit = kind == 0 ? random.between(1200, 2000) : random.between(300, 1200);
    const int weighted_percent = kind == 0 ? 100 : kind == 1 ? 50 : 0;
    const std::int64_t filled = kind == 0 ? limit * 2 / 3 : limit;  // about the steps the burst takes
    const std::int64_t trace_steps = filled + random.between(100, 300);
    const std::int64_t burst_start = 1700000000000000 + traces * 10000000000;
    std::int64_t now = burst_start;
    std::vector<std::pair<std::string, std::int64_t>> recorded;  // members sent with a cost, with it
    for (std::int64_t step = 0; step < trace_steps && steps < steps_wanted; ++step, ++steps) {
      // A burst fills the window; then the clock jumps to where part of the burst slid out, and on by
      // sixteenths of the window now and then.
      if (step == filled) {
        now = burst_start + window + random.between(0, now - burst_start);
      } else if (step > filled && random.chance(2)) {
        now += random.between(0, window / 16);
      } else {
        now += random.between(0, window / (4 * limit) + 1);
      }
      LogArguments arguments{window, limit, 1, std::to_string(now), "m:" + std::to_string(step), kTtl, false};
      // Now and then, on weighted windows, a reservation settled or a lease, by the script on both keys: a
      // settled entry is still an entry, and a lease's lies ahead of the clock, both of which the count
      // from the bookkeeping must hold to. (Windows of one unit each stay so: counted by entries, they keep
      // their slid entries longest.)
      std::vector<std::string> script_call;
      const std::int64_t other = weighted_percent > 0 ? random.between(0, 99) : 100;
      if (other < 3 && !recorded.empty()) {
        const auto& [member, cost] = random.anyOf(recorded);
        arguments.cost = random.between(0, cost + 3);
        arguments.member = member;
        script_call = swl::test::settleCall(scripts, arguments, cost);
        ++settles;
      } else if (other < 5) {
        arguments.cost = random.between(1, 4);
        arguments.member = "lease:" + std::to_string(step);
        script_call = swl::test::leaseCall(scripts, arguments, random.between(arguments.cost, 8),
                                           random.between(1, window / 4 + 1));
        ++leases;
      }
      if (script_call.empty()) {
        if (random.chance(weighted_percent)) {
          // Large costs only once the burst is in: before, one would fill the window.
          const bool large = step > filled && random.chance(10);
          arguments.cost = large ? random.between(1, limit) : random.between(1, kind == 0 ? 2 : 4);
        }
        if (random.chance(3)) arguments.cost = 0;
        arguments.count_rejected = random.chance(10);
        if (arguments.cost > 0) recorded.emplace_back(arguments.member, arguments.cost);
      }
      const std::string start = std::to_string(now - window);
      redis.send({"ZCOUNT", by_module, "(0", start});
      redis.send({"ZCOUNT", by_module, "(" + start, "(" + times_end});
      redis.send({"ZCOUNT", by_module, times_end, "+inf"});
      const bool decision = script_call.empty();
      const std::vector<std::string> call =
          swl::test::sendStep(redis, decision ? swl::test::logCall(scripts.decide, arguments) : std::move(script_call),
                              by_script, by_module, decision && !random.chance(10));
      const OwnedReply slid = redis.receive(), live = redis.receive(), sums = redis.receive();
      const StepReplies replies(redis);
      if (!replies.agree()) {
        FAIL("trace " << traces << ": " << swl::test::describedCall(call, scripts) << "\n  " << replies.disagreement());
      }
      if (!decision) continue;
      deep_start += slid->integer > swl::native::kWalk && live->integer > swl::native::kWalk ? 1 : 0;
      many_sums += sums->integer > swl::native::kWalk ? 1 : 0;
      weighted += arguments.cost > 1 ? 1 : 0;
      if (arguments.cost > 0) (replies.admitted() ? admitted : refused) += 1;
    }
    if (swl::test::countedByUnits(redis, by_module)) ++units_sets;
    redis.command({"DEL", by_script, by_module});
  }
  std::printf(
      "module vs script, deep windows: %lld steps in %lld traces; %lld admitted, %lld refused, %lld weighted; %lld "
      "calls with more entries than a walk passes on either side of the window's start, %lld on sets with more "
      "sums than a walk passes; %lld settles, %lld leases; %lld traces ended counted by units\n",
      static_cast<long long>(steps), static_cast<long long>(traces), static_cast<long long>(admitted),
      static_cast<long long>(refused), static_cast<long long>(weighted), static_cast<long long>(deep_start),
      static_cast<long long>(many_sums), static_cast<long long>(settles), static_cast<long long>(leases),
      static_cast<long long>(units_sets));
  for (const std::int64_t count : {admitted, refused, weighted, deep_start, many_sums, settles, leases, units_sets}) {
    CHECK(count > 0);
  }
}
