// MultiLimiter's holds: reserve() holds units on every rule's log until commit() settles them or the hold
// runs out on Redis's clock; every decision counts what is held. On a real redis-server, a manual clock.

#include <swl/swl.hpp>

#include "support/manual_time.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using swl::test::ManualTime;
using swl::test::textReply;

namespace {

// A budget of 1,000 units a minute on one key, keeping holds.
struct Budget : ManualTime {
  Budget() { limiter.keepHolds(); }

  swl::MultiDecision check(std::int64_t cost = 1) { return limiter.tryAcquire({"api-key:42"}, cost); }
  // What the window holds, spent and held units alike, past the limit too: a dry run under a limit far
  // above it.
  std::int64_t held() {
    const swl::Limit far{1'000'000'000, 60s};
    swl::MultiLimiter<>::Prepared prepared = limiter.prepare({"api-key:42"}, {1}, {far}, swl::Recording::never);
    swl::ScriptReply reply;
    reply.reply = connection.run(*prepared.call());
    return far.max_requests - limiter.settle(prepared, std::move(reply)).decision.remaining;
  }
  swl::MultiReservation reserve(std::int64_t units, std::chrono::microseconds hold_for = 30s) {
    return limiter.reserve({"api-key:42"}, units, hold_for);
  }
  swl::MultiCommit commit(const std::string& id, std::int64_t actual) {
    return limiter.commit({"api-key:42"}, id, actual);
  }

  swl::MultiLimiter<> limiter{connection, {{"budget", swl::Limit{1000, 60s}}}, options};
};

}  // namespace

TEST_CASE_METHOD(Budget, "a reservation holds its units: a check counts them, and a commit settles them") {
  const swl::MultiReservation reservation = reserve(600);
  REQUIRE(reservation);
  CHECK(held() == 600);
  CHECK_FALSE(check(500));  // 600 held + 500 > 1,000
  clock.advance(1s);

  const swl::MultiCommit committed = commit(reservation.id, 200);
  CHECK(committed.outcome == swl::Commitment::released);
  CHECK_FALSE(committed.charge);
  CHECK(held() == 200);
  CHECK(check(800));
  CHECK(held() == 1000);

  // The 200 stay at the reservation's time: they leave the window a minute after it, the 800 a second later.
  clock.advance(59s);
  CHECK(held() == 800);
}

TEST_CASE_METHOD(Budget, "a hold that runs out is released with nothing charged, on the next call") {
  const swl::MultiReservation reservation = reserve(900, 10s);
  REQUIRE(reservation);
  clock.advance(10s - 1us);
  CHECK(held() == 900);
  CHECK_FALSE(check(101));
  clock.advance(1us);
  CHECK(held() == 0);
  CHECK(check(1000));
}

TEST_CASE_METHOD(
    Budget, "a commit whose hold ran out charges its units as spent, once, and a repeated commit charges nothing") {
  const swl::MultiReservation reservation = reserve(300, 5s);
  REQUIRE(reservation);
  REQUIRE(check(600));
  clock.advance(6s);
  CHECK(held() == 600);

  const swl::MultiCommit late = commit(reservation.id, 700);
  CHECK(late.outcome == swl::Commitment::charged);
  REQUIRE(late.charge);
  CHECK_FALSE(*late.charge);  // 600 + 700 passed the limit: recorded all the same
  CHECK(held() == 1300);
  CHECK(commit(reservation.id, 700).outcome == swl::Commitment::committed_before);
  CHECK(held() == 1300);
}

TEST_CASE_METHOD(Budget, "a commit twice releases once, above the hold the excess is charged, and 0 releases it all") {
  const swl::MultiReservation first = reserve(400);
  const swl::MultiReservation second = reserve(400);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first.id != second.id);
  CHECK(commit(first.id, 700).outcome == swl::Commitment::released);  // 300 past the hold, charged
  CHECK(held() == 1100);
  CHECK(commit(first.id, 700).outcome == swl::Commitment::committed_before);
  CHECK(held() == 1100);
  CHECK(commit(second.id, 0).outcome == swl::Commitment::released);
  CHECK(held() == 700);
  CHECK(commit(second.id, 500).outcome == swl::Commitment::committed_before);
  CHECK(held() == 700);
}

TEST_CASE_METHOD(Budget, "an unknown reservation is charged as spent units are, and remembered") {
  const swl::MultiCommit charged = commit("250:never-reserved", 250);
  CHECK(charged.outcome == swl::Commitment::charged);
  REQUIRE(charged.charge);
  CHECK(*charged.charge);
  CHECK(held() == 250);
  CHECK(commit("250:never-reserved", 250).outcome == swl::Commitment::committed_before);
  CHECK(held() == 250);
  CHECK(commit("5:also-unknown", 0).outcome == swl::Commitment::charged);  // 0 spent: nothing to charge
  CHECK(held() == 250);
}

TEST_CASE_METHOD(Budget, "a reservation that does not fit is refused, records nothing and holds nothing") {
  REQUIRE(check(700));
  const swl::MultiReservation refused = reserve(400);
  CHECK_FALSE(refused);
  CHECK(refused.id.empty());
  CHECK_FALSE(refused.holds_full);
  CHECK(refused.decision.decision.retry_after == 60s);
  CHECK(held() == 700);
  CHECK(textReply(connection, {"EXISTS", swl::detail::holdsKeyOf(limiter.redisKey(0, "api-key:42"))}) == "");
}

TEST_CASE_METHOD(Budget, "at most kMaxHolds holds on a key at once, and one more waits for the first to end") {
  std::vector<std::string> ids;
  for (std::int64_t i = 0; i < swl::MultiLimiter<>::kMaxHolds; ++i) {
    const swl::MultiReservation reservation = reserve(1, 20s);
    REQUIRE(reservation);
    ids.push_back(reservation.id);
    clock.advance(1ms);
  }
  const swl::MultiReservation full = reserve(1, 20s);
  CHECK_FALSE(full);
  REQUIRE(full.holds_full);
  CHECK(*full.holds_full == 0);
  CHECK(full.decision.decision.retry_after == 20s - 64ms);  // the first hold ends then
  CHECK(held() == swl::MultiLimiter<>::kMaxHolds);
  CHECK(check(1));  // a decision that holds nothing is not refused for it
  REQUIRE(commit(ids.front(), 1).outcome == swl::Commitment::released);
  CHECK(reserve(1, 20s));

  // All of them run out at once: the next call releases them all.
  clock.advance(21s);
  CHECK(held() == 2);  // the committed one and the decision
}

TEST_CASE_METHOD(Budget, "reservations refuse bad input, naming it, and change nothing") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(reserve(10, 0s), Contains("a hold of 0 us is not in 1 ms..60000000 us"));
  CHECK_THROWS_WITH(reserve(10, 61s), Contains("a hold of 61000000 us"));
  CHECK_THROWS_WITH(reserve(0), Contains("cost"));
  CHECK_THROWS_WITH(reserve(1001), Contains("1001"));
  CHECK_THROWS_WITH(commit("12", 1), Contains("'12' is not a reservation id"));
  CHECK_THROWS_WITH(commit("0:abc", 1), Contains("is not a reservation id"));
  CHECK_THROWS_WITH(commit("x1:abc", 1), Contains("is not a reservation id"));
  CHECK_THROWS_WITH(commit("1:", 1), Contains("is not a reservation id"));
  CHECK_THROWS_WITH(commit("1:abc", -1), Contains("-1 units spent"));
  CHECK(held() == 0);

  swl::MultiLimiter<> without(connection, {{"budget", swl::Limit{1000, 60s}}}, options);
  CHECK_THROWS_WITH(without.reserve({"k"}, 1, 1s), Contains("keeps no holds; call keepHolds()"));
  swl::MultiLimiter<> bucket(connection, {swl::Rule::gcra("burst", swl::Limit{10, 1s})}, options);
  bucket.keepHolds();
  CHECK_THROWS_WITH(bucket.reserve({"k"}, 1, 1s), Contains("the rule 'burst' is not a sliding window log"));
}

TEST_CASE_METHOD(ManualTime,
                 "holds on several rules: reserve, commit, charges and checks against a model of the windows") {
  // Two logs on one user key: 1,000 units in 10 s and 3,000 in 60 s. A model keeps every entry (its time,
  // its units, its hold) and counts each window as the log must.
  const swl::Limit short_limit{1000, 10s}, long_limit{3000, 60s};
  swl::MultiLimiter<> limiter(connection, {{"short", short_limit}, {"long", long_limit}}, options);
  limiter.keepHolds();
  const std::vector<std::string_view> keys{"user:7", "user:7"};

  struct Entry {
    std::chrono::microseconds at;
    std::int64_t units;
    bool held = false;
    std::chrono::microseconds hold_end{0};
  };
  struct Reservation {
    std::size_t entry = SIZE_MAX;  // none for an id never reserved
    std::optional<std::chrono::microseconds> committed_at;
  };
  std::vector<Entry> entries;
  std::map<std::string, Reservation> reservations;
  std::vector<std::string> ids;
  std::mt19937_64 random(20261202);
  std::size_t released = 0, ran_out = 0, late_commits = 0, repeats = 0, unknown = 0, over_hold = 0, refusals = 0,
              full = 0, charges_past = 0, forgotten = 0;

  const auto now = [&] { return clock.now(); };
  const auto runOut = [&] {  // holds whose time came: released, nothing charged
    for (Entry& entry : entries) {
      if (entry.held && entry.hold_end <= now()) {
        entry.held = false, entry.units = 0;
        ++ran_out;
      }
    }
  };
  const auto inWindow = [&](std::chrono::microseconds window) {
    std::int64_t sum = 0;
    for (const Entry& entry : entries)
      if (entry.at > now() - window) sum += entry.units;
    return sum;
  };
  const auto liveHolds = [&] {
    return std::count_if(entries.begin(), entries.end(), [](const Entry& entry) { return entry.held; });
  };

  const int steps = 10000;
  for (int step = 0; step < steps; ++step) {
    clock.advance(std::chrono::microseconds(1 + random() % 400'000));
    runOut();
    const std::int64_t short_held = inWindow(short_limit.window), long_held = inWindow(long_limit.window);
    const int what = static_cast<int>(random() % 10);
    if (what < 4) {
      const std::int64_t units = 1 + static_cast<std::int64_t>(random() % 200);
      const auto hold_for = std::chrono::microseconds(1000 + random() % 9'999'000);
      const swl::MultiReservation reservation = limiter.reserve(keys, units, hold_for);
      const bool fits = short_held + units <= 1000 && long_held + units <= 3000;
      const bool room = liveHolds() < swl::MultiLimiter<>::kMaxHolds;
      REQUIRE(static_cast<bool>(reservation) == (fits && room));
      full += fits && !room;
      refusals += !fits;
      if (reservation) {
        reservations[reservation.id] = {entries.size(), std::nullopt};
        ids.push_back(reservation.id);
        entries.push_back({now(), units, true, now() + hold_for});
      }
    } else if (what < 7 && !ids.empty()) {
      // Mostly one of the last few reservations (in force, or just run out), sometimes any, or an unknown id.
      const std::size_t recent = ids.size() - 1 - std::min<std::size_t>(ids.size() - 1, random() % 4);
      const int pick = static_cast<int>(random() % 10);
      const bool unknown_id = pick == 0;
      const std::string id = unknown_id ? "9:unknown-" + std::to_string(step)
                             : pick < 8 ? ids[recent]
                                        : ids[random() % ids.size()];
      const std::int64_t actual = static_cast<std::int64_t>(random() % (unknown_id ? 100 : 300));
      const swl::MultiCommit committed = limiter.commit(keys, id, actual);
      Reservation& reservation = reservations[id];
      // A commit is remembered as long as the longest window: a repeat within it changes nothing.
      const bool remembered = reservation.committed_at && now() < *reservation.committed_at + long_limit.window;
      if (reservation.entry != SIZE_MAX && entries[reservation.entry].held) {
        REQUIRE(committed.outcome == swl::Commitment::released);
        Entry& entry = entries[reservation.entry];
        over_hold += actual > entry.units;
        entry.units = actual, entry.held = false;
        ++released;
      } else if (remembered) {
        REQUIRE(committed.outcome == swl::Commitment::committed_before);
        ++repeats;
      } else {
        REQUIRE(committed.outcome == swl::Commitment::charged);
        forgotten += reservation.committed_at.has_value();
        if (reservation.entry == SIZE_MAX) {
          ++unknown;
        } else {
          ++late_commits;
        }
        if (actual > 0) {
          REQUIRE(committed.charge);
          const bool fitted = short_held + actual <= std::max<std::int64_t>(1000, actual) &&
                              long_held + actual <= std::max<std::int64_t>(3000, actual);
          REQUIRE(static_cast<bool>(*committed.charge) == fitted);
          charges_past += !fitted;
          entries.push_back({now(), actual, false, {}});
        }
      }
      if (!remembered) reservation.committed_at = now();
    } else {
      const std::int64_t cost = 1 + static_cast<std::int64_t>(random() % 50);
      const swl::MultiDecision decision = limiter.tryAcquire(keys, cost);
      REQUIRE(static_cast<bool>(decision) == (short_held + cost <= 1000 && long_held + cost <= 3000));
      REQUIRE(decision.rules[0].remaining == std::max<std::int64_t>(0, 1000 - short_held - (decision ? cost : 0)));
      REQUIRE(decision.rules[1].remaining == std::max<std::int64_t>(0, 3000 - long_held - (decision ? cost : 0)));
      if (decision) entries.push_back({now(), cost, false, {}});
    }
  }
  std::cout << "holds against the model, " << steps << " steps: " << released << " released, " << ran_out
            << " ran out, " << late_commits << " committed after they ran out, " << repeats << " repeated commits, "
            << unknown << " unknown ids, " << over_hold << " commits above the hold, " << charges_past
            << " charges past a limit, " << refusals << " reservations that did not fit, " << full
            << " refused for a full set of holds, " << forgotten << " commits repeated after they were forgotten\n";
  CHECK(released > 50);
  CHECK(ran_out > 30);
  CHECK(late_commits > 10);
  CHECK(repeats > 10);
  CHECK(unknown > 10);
  CHECK(over_hold > 10);
  CHECK(charges_past > 10);
  CHECK(refusals > 100);
  // The logs' sums agree with their entries after every settle.
  for (std::size_t rule = 0; rule < 2; ++rule) {
    CHECK(connection.run(swl::detail::logCheckScript(), {limiter.redisKey(rule, "user:7")}, {})->isArray());
  }
}
