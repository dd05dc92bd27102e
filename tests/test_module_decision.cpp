// The module's log (module/log/) decided in this process, without Redis, over a set in memory that keeps
// Redis's rules (support/memory_set.hpp), held answer by answer to the exact model of a log
// (support/log_model.hpp) on random traces: costs of one unit (the fast path, on Redis's clock) and of
// many (sets counted by units, their sums searched), peeks, counted refusals, windows and limits that
// change, a client's clock that steps back, and keys hit again after a quiet window. After every step the
// set's bookkeeping is held to its entries. The same traces' kinds run against the script on a real server
// in test_module_log.cpp and test_module_clock.cpp; this one needs neither Redis nor the module built.
//
// SWL_IN_PROCESS_DECISIONS: how many decisions the traces make between them (100,000 unless set).

#include "../module/log/decision.hpp"
#include "support/log_model.hpp"
#include "support/memory_set.hpp"
#include "support/wanted.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using swl::native::Answer;
using swl::native::LogDecision;
using swl::native::Request;
using swl::test::Expected;
using swl::test::MemorySet;
using swl::test::ModelLog;
using swl::test::Tally;

// One key: its set and its model.
struct InProcessKey {
  explicit InProcessKey(const std::string& name) : set(name) {}
  MemorySet set;
  ModelLog model;
  std::int64_t window = 0;
  std::int64_t limit = 0;
  std::string window_text;
  bool weighted = false;
};

// A trace: a few keys, decided on Redis's clock (strictly later at every call, as Redis's TIME between two
// commands) or on a client's clock that may step back.
class InProcessTrace {
 public:
  InProcessTrace(std::uint64_t seed, bool redis_clock) : random_(seed), redis_clock_(redis_clock) {
    for (const char* name : {"a", "b", "c"}) {
      InProcessKey& key = keys_.emplace(name, InProcessKey(name)).first->second;
      choose(key);
    }
  }

  void step(Tally& tally) {
    InProcessKey& key = pick();
    if (chance(8)) choose(key);
    advance(key, tally);
    Request request;
    request.window = key.window;
    request.window_text = key.window_text;
    request.limit = key.limit;
    request.cost = cost(key);
    request.now = now_;
    request.redis_time = redis_clock_;
    member_ = "m" + std::to_string(++members_);
    request.member = member_;
    request.count_rejected = chance(15);
    const Expected expected = expect(key, request, tally);
    const Answer answer = LogDecision<MemorySet>(key.set, request).decide();
    INFO("key " << key.set.name() << " at " << now_ << ", window " << key.window << ", limit " << key.limit << ", cost "
                << request.cost << (request.count_rejected ? ", refusals counted" : "")
                << (redis_clock_ ? ", Redis's clock" : ", the client's clock"));
    REQUIRE(answer.remaining == expected.remaining);
    REQUIRE(answer.reset_after == expected.reset_after);
    if (request.cost > 0) {  // a peek answers what it finds, whatever its allowed says
      REQUIRE((answer.allowed == 1) == expected.allowed);
      REQUIRE(answer.retry_after == expected.retry_after);
    }
    checkBookkeeping(key.set, tally);
  }

 private:
  InProcessKey& pick() {
    auto at = keys_.begin();
    std::advance(at, between(0, static_cast<std::int64_t>(keys_.size()) - 1));
    return at->second;
  }

  // A window and a limit for the key's next calls: small limits fill and refuse, large ones reach the
  // sums' levels; a changed window moves the horizon. A key asked for one unit at a time stays counted
  // by entries (and takes the fast path on Redis's clock); a weighted one is counted by units.
  void choose(InProcessKey& key) {
    static const std::int64_t kLimits[] = {1, 2, 3, 5, 8, 20, 100, 400, 2000};
    static const std::int64_t kWindows[] = {1000, 7000, 50000, 300000};
    key.limit = kLimits[between(0, 8)];
    key.window = kWindows[between(0, 3)];
    key.window_text = std::to_string(key.window);
    key.weighted = chance(50);
  }

  // A peek, one unit, a few, or up to the limit: small costs fill a window with many entries, whose
  // refusals then wait on entries deep inside it.
  std::int64_t cost(const InProcessKey& key) {
    if (chance(10)) return 0;
    if (!key.weighted || key.limit == 1 || chance(40)) return 1;
    if (chance(85)) return between(2, std::min<std::int64_t>(key.limit, 4));
    return between(2, key.limit);
  }

  // Redis's clock moves on at every call; a client's may step back a little.
  void advance(const InProcessKey& key, Tally& tally) {
    // Bursts of calls close together fill a window with hundreds of entries; longer steps slide it.
    const std::int64_t step = chance(2)    ? key.window * 3
                              : chance(70) ? between(1, std::max<std::int64_t>(2, key.window / 5000))
                                           : between(1, std::max<std::int64_t>(2, key.window / 20));
    if (!redis_clock_ && chance(5)) {
      now_ -= between(1, key.window / 4);
      tally.add("clock stepped back");
    } else {
      now_ += step;
    }
    if (step == key.window * 3) tally.add("calls after a quiet window");
  }

  // What the model says, the request recorded in it when the log would record it.
  Expected expect(InProcessKey& key, const Request& request, Tally& tally) {
    ModelLog& m = key.model;
    const std::size_t first = m.firstIn(request.now, request.window);
    const bool allowed = m.unitsFrom(first) + request.cost <= request.limit;
    if (request.cost == 0) tally.add("peeks");
    if (!allowed && request.cost > 0) tally.add(request.count_rejected ? "refusals counted" : "refusals");
    if (m.horizonBinds(request.now, request.window)) tally.add("calls where the horizon binds");
    if (request.cost > 0 && (allowed || request.count_rejected)) {
      m.record(request.now, request.now, request.window, request.cost);
    }
    return m.answer(first, allowed, request.cost, request.limit, request.now, request.window, tally);
  }

  // A set counted by units numbers exactly the entries it holds.
  static void checkBookkeeping(const MemorySet& set, Tally& tally) {
    const std::vector<swl::native::Scored> members = set.all();
    if (members.empty() || members[0].member.empty() || members[0].member[0] != swl::native::kBookkeepingByte) {
      tally.add("steps on a set counted by entries");
      return;
    }
    tally.add("steps on a set counted by units");
    const std::optional<swl::native::Book> book = swl::native::bookkeepingOf(members[0].member);
    REQUIRE(book);
    std::int64_t entries = 0;
    for (const auto& member : members) {
      entries += member.score > 0 && member.score < static_cast<double>(swl::native::kTimesEnd) ? 1 : 0;
    }
    REQUIRE(book->next - book->oldest == entries);
  }

  std::int64_t between(std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random_);
  }
  bool chance(int percent) { return between(0, 99) < percent; }

  std::mt19937_64 random_;
  bool redis_clock_;
  std::int64_t now_ = 1'700'000'000'000'000;
  std::map<std::string, InProcessKey> keys_;
  std::int64_t members_ = 0;
  std::string member_;
};

}  // namespace

TEST_CASE("the module's log, decided without Redis over a set in memory, agrees with the model on random traces") {
  const std::int64_t decisions = swl::test::wanted("SWL_IN_PROCESS_DECISIONS", 100000);
  Tally tally;
  const std::int64_t per_trace = 2000;
  for (std::int64_t trace = 0; trace * per_trace < decisions; ++trace) {
    INFO("trace " << trace);
    InProcessTrace steps(static_cast<std::uint64_t>(trace) + 1, trace % 2 == 1);
    for (std::int64_t i = 0; i < per_trace; ++i) steps.step(tally);
  }
  std::cout << "in-process traces of the module's log, " << decisions << " decisions:\n" << tally.text();
  for (const char* boundary :
       {"peeks", "refusals", "refusals counted", "clock stepped back", "calls after a quiet window",
        "calls where the horizon binds", "steps on a set counted by units", "steps on a set counted by entries",
        "waits read near an end of the window", "waits found through the sums"}) {
    INFO(boundary);
    CHECK(tally[boundary] > 0);
  }
}
