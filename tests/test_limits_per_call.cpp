// Limits chosen per call (a tenant's plan): every limiter decides under the limit a call brings, still
// in one EVALSHA, and what each algorithm makes of a key whose limit changes is what docs/limits.md's
// "Limits per tenant" says: the log, the fixed window, the sliding counter and the bucketed window
// judge the units they hold by the new limit from the next decision on; GCRA carries a key's past as
// time owed at the rate it was admitted at; a changed window keeps what the log still holds and starts
// the counting algorithms afresh.

#include <swl/swl.hpp>

#include "support/manual_time.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using swl::test::ManualTime;
using swl::test::RedisServer;

namespace {

// Admits `key` under `limit` until refused; returns how many were admitted (at most `most`).
template <class Limiter>
int admittedUntilRefused(Limiter& limiter, std::string_view key, const swl::Limit& limit, int most = 1000) {
  for (int admitted = 0; admitted < most; ++admitted) {
    if (!limiter.tryAcquire(key, 1, limit).allowed) return admitted;
  }
  return most;
}

const swl::Limit kOwn{10, 1s};
const swl::Limit kFree{3, 1s};
const swl::Limit kPro{20, 1s};

}  // namespace

TEMPLATE_TEST_CASE("a limit given per call decides the key under it, in one EVALSHA, beside keys under other limits",
                   "", swl::SlidingWindowLimiter<>, swl::SlidingCounterLimiter<>, swl::FixedWindowLimiter<>,
                   swl::GcraLimiter<>, swl::BucketedWindowLimiter<>) {
  ManualTime time;
  TestType limiter(time.connection, kOwn, time.options);
  REQUIRE(limiter.tryAcquire("warm-up").allowed);  // loads the script: later calls are one EVALSHA each
  const long long evalsha_before = swl::test::commandCalls(time.connection, "evalsha");

  CHECK(admittedUntilRefused(limiter, "tenant:free", kFree) == 3);
  CHECK(admittedUntilRefused(limiter, "tenant:pro", kPro) == 20);
  CHECK(admittedUntilRefused(limiter, "tenant:own", kOwn) == 10);
  const swl::Decision refused = limiter.tryAcquire("tenant:free", 1, kFree);
  CHECK(refused.limit == 3);
  CHECK(refused.remaining == 0);
  CHECK(limiter.tryAcquire("tenant:pro", 1, kPro).limit == 20);
  CHECK(limiter.peek("tenant:pro", kPro).used == 20);
  CHECK(limiter.peek("tenant:pro", kPro).limit == 20);
  CHECK(swl::test::commandCalls(time.connection, "evalsha") - evalsha_before == 4 + 21 + 11 + 2 + 2);

  // A batch carries a limit per request.
  const std::vector<swl::Outcome> batch = limiter.tryAcquireMany({{"batch", 1, swl::Limit{2, 1s}},
                                                                  {"batch", 1, swl::Limit{2, 1s}},
                                                                  {"batch", 1, swl::Limit{2, 1s}},
                                                                  {"other", 1, kPro}});
  CHECK(batch[0].decision.allowed);
  CHECK(batch[1].decision.allowed);
  CHECK_FALSE(batch[2].decision.allowed);
  CHECK(batch[2].decision.limit == 2);
  CHECK(batch[3].decision.allowed);
  CHECK(batch[3].decision.remaining == 19);
}

TEMPLATE_TEST_CASE(
    "a lowered limit refuses until the units the window holds fit it, and a raised one admits the "
    "difference at once",
    "", swl::SlidingWindowLimiter<>, swl::SlidingCounterLimiter<>, swl::FixedWindowLimiter<>,
    swl::BucketedWindowLimiter<>) {
  ManualTime time;
  TestType limiter(time.connection, kOwn, time.options);
  for (int i = 0; i < 8; ++i) REQUIRE(limiter.tryAcquire("k").allowed);

  const swl::Limit lowered{5, 1s};
  const swl::Decision refused = limiter.tryAcquire("k", 1, lowered);
  CHECK_FALSE(refused.allowed);
  CHECK(refused.limit == 5);
  CHECK(refused.remaining == 0);
  CHECK(limiter.peek("k", lowered).used == 8);  // nothing recorded was lost
  // Its retry_after is exact under the lowered limit: then the window holds few enough.
  time.clock.advance(refused.retry_after - 1us);
  CHECK_FALSE(limiter.tryAcquire("k", 1, lowered).allowed);
  time.clock.advance(1us);
  CHECK(limiter.tryAcquire("k", 1, lowered).allowed);

  limiter.reset("k");
  for (int i = 0; i < 8; ++i) REQUIRE(limiter.tryAcquire("k").allowed);
  CHECK(admittedUntilRefused(limiter, "k", kPro) == 12);
  CHECK_FALSE(limiter.tryAcquire("k").allowed);  // back under its own limit, the window is over it
}

TEST_CASE("GCRA carries a key's past as time owed at the rate it was admitted at") {
  ManualTime time;
  swl::GcraLimiter<> limiter(time.connection, kOwn, time.options);
  // Five units at 10 a second owe half a second. At 20 a second each unit owes 50 ms: ten more fit.
  for (int i = 0; i < 5; ++i) REQUIRE(limiter.tryAcquire("raised").allowed);
  CHECK(admittedUntilRefused(limiter, "raised", kPro) == 10);
  // At 5 a second each unit owes 200 ms: two more fit in the half second left.
  for (int i = 0; i < 5; ++i) REQUIRE(limiter.tryAcquire("lowered").allowed);
  CHECK(admittedUntilRefused(limiter, "lowered", swl::Limit{5, 1s}) == 2);

  // A fraction of a microsecond owed under one limit is rounded up, never lost, under another: 1 s / 3
  // leaves a third of a microsecond, so a limit of 1 per 1 s then admits nothing more for 1 s + 1 us.
  REQUIRE(limiter.tryAcquire("fraction", 1, swl::Limit{3, 1s}).allowed);
  const swl::Decision refused = limiter.tryAcquire("fraction", 1, swl::Limit{2, 1s});
  REQUIRE(refused.allowed);  // 333,334 us + 500,000 us fit in a second
  const swl::Decision after = limiter.tryAcquire("fraction", 1, swl::Limit{1, 1s});
  CHECK_FALSE(after.allowed);
  CHECK(after.retry_after == 833'334us);
}

TEST_CASE("the log under a changed window counts what it holds: entries a shorter window let go are gone for good") {
  ManualTime time;
  // On any microsecond: whether the log has yet removed the entries it let go must not matter.
  time.clock.advance(std::chrono::microseconds(GENERATE(0, 1, 3, 5)));
  swl::SlidingWindowLimiter<> limiter(time.connection, kOwn, time.options);
  const swl::Limit longer{10, 2s};
  for (int i = 0; i < 6; ++i) REQUIRE(limiter.tryAcquire("k").allowed);
  time.clock.advance(1500ms);
  // Under 2 s the six entries of 1.5 s ago still count; under 1 s they have slid out.
  CHECK(limiter.peek("k", longer).used == 6);
  CHECK(admittedUntilRefused(limiter, "k", longer) == 4);
  time.clock.advance(100ms);
  CHECK(limiter.peek("k", kOwn).used == 4);
  CHECK(admittedUntilRefused(limiter, "k", kOwn) == 6);
  // Those decisions' window let the six older entries go: gone for good, under any window after.
  CHECK(limiter.peek("k", longer).used == 10);
  CHECK(admittedUntilRefused(limiter, "k", swl::Limit{20, 4s}) == 10);
}

TEST_CASE("a widened window after a shortened one counts only what the shortened one still held") {
  ManualTime time;
  time.clock.advance(7us);  // off every multiple of 8: the log removes nothing it let go before this
  swl::SlidingWindowLimiter<> limiter(time.connection, kOwn, time.options);
  const swl::Limit shorter{10, 500ms}, wider{10, 2s};
  for (int i = 0; i < 3; ++i) REQUIRE(limiter.tryAcquire("k").allowed);
  time.clock.advance(600ms);
  REQUIRE(limiter.tryAcquire("k", 1, shorter).allowed);  // its window lets the first three go
  time.clock.advance(1us);
  CHECK(limiter.peek("k", wider).used == 1);
  CHECK(limiter.tryAcquire("k", 1, wider).remaining == 8);
  time.clock.advance(1us);
  // A refusal or a peek records nothing, so its window lets nothing go.
  CHECK(limiter.peek("k", shorter).used == 2);
  CHECK(limiter.peek("k", wider).used == 2);
}

TEMPLATE_TEST_CASE("the counting algorithms start a key afresh under a changed window", "",
                   swl::SlidingCounterLimiter<>, swl::FixedWindowLimiter<>, swl::BucketedWindowLimiter<>) {
  ManualTime time;
  TestType limiter(time.connection, kOwn, time.options);
  CHECK(admittedUntilRefused(limiter, "k", kOwn) == 10);
  CHECK(admittedUntilRefused(limiter, "k", swl::Limit{10, 2s}) == 10);
  CHECK(limiter.peek("k", swl::Limit{10, 2s}).used == 10);
}

TEST_CASE("the bucketed window keeps a key's counts under a window whose buckets are as wide, read under it") {
  ManualTime time;
  const swl::Limit old_window{10, 1'000'000us}, longer{10, 1'000'001us};  // both: buckets of 15,874 us
  REQUIRE(swl::BucketedWindow<>::bucketWidth(old_window.window) == swl::BucketedWindow<>::bucketWidth(longer.window));
  swl::BucketedWindowLimiter<> limiter(time.connection, old_window, time.options);
  CHECK(admittedUntilRefused(limiter, "k", old_window) == 10);
  CHECK(limiter.peek("k", longer).used == 10);  // the same buckets, the same times: nothing is forgotten
  CHECK(admittedUntilRefused(limiter, "k", longer) == 0);
  const swl::Decision refused = limiter.tryAcquire("k", 1, longer);
  // The bucket leaves at its end plus the new window.
  time.clock.advance(refused.retry_after - 1us);
  CHECK_FALSE(limiter.tryAcquire("k", 1, longer).allowed);
  time.clock.advance(1us);
  CHECK(limiter.tryAcquire("k", 1, longer).allowed);
}

TEST_CASE("a limit given per call no limiter could hold is refused with a message that names it") {
  ManualTime time;
  swl::SlidingWindowLimiter<> log(time.connection, kOwn, time.options);
  CHECK_THROWS_WITH(log.tryAcquire("k", 1, swl::Limit{0, 1s}), Catch::Contains("max_requests 0 is not in 1..2^53-1"));
  CHECK_THROWS_WITH(log.tryAcquire("k", 1, swl::Limit{5, 0us}), Catch::Contains("window of 0 us is not positive"));
  CHECK_THROWS_WITH(log.tryAcquire("k", 4, kFree), Catch::Contains("cost 4 exceeds the limit of 3"));
  CHECK_THROWS_AS(log.peek("k", swl::Limit{-1, 1s}), swl::InvalidArgument);
  CHECK_THROWS_AS(log.tryAcquireMany({{"k", 1, swl::Limit{0, 1s}}}).at(0).value(), swl::InvalidArgument);
  swl::GcraLimiter<> gcra(time.connection, kOwn, time.options);
  CHECK_THROWS_WITH(gcra.tryAcquire("k", 1, swl::Limit{std::int64_t{1} << 40, 1'000'000s}),
                    Catch::Contains("too fine to count exactly"));
  swl::SlidingWindowLimiter<swl::PrefixKey, swl::CompactMember, swl::FixedTtl> fixed_ttl(
      time.connection, kOwn, time.options, swl::PrefixKey(), swl::CompactMember(), swl::FixedTtl(2s));
  CHECK_THROWS_WITH(fixed_ttl.tryAcquire("k", 1, swl::Limit{10, 5s}), Catch::Contains("shorter than the window"));
  swl::LocalLimiter local(kOwn);
  CHECK_THROWS_WITH(local.tryAcquire("k", 1, swl::Limit{0, 1s}), Catch::Contains("max_requests 0"));
  // The failure policy never answers for bad input.
  swl::LimiterOptions open = time.options;
  open.on_failure = swl::FailurePolicy::allow;
  swl::SlidingWindowLimiter<> lenient(time.connection, kOwn, open);
  CHECK_THROWS_AS(lenient.tryAcquire("k", 1, swl::Limit{0, 1s}), swl::InvalidArgument);
}

TEST_CASE("validate and a listed key refuse a limit given per call no limiter could hold, as tryAcquire does") {
  ManualTime time;
  swl::LimiterOptions listed = time.options;
  auto access = std::make_shared<swl::AccessList>();
  access->allow("vip");
  listed.access = access;
  swl::SlidingWindowLimiter<> log(time.connection, kOwn, listed);
  CHECK_THROWS_WITH(log.validate("k", 1, swl::Limit{0, 1s}), Catch::Contains("max_requests 0 is not in 1..2^53-1"));
  CHECK_THROWS_WITH(log.tryAcquire("vip", 1, swl::Limit{0, 1s}), Catch::Contains("max_requests 0"));
  CHECK(log.tryAcquire("vip", 1, kFree).tier == swl::Tier::allow_list);
  swl::GcraLimiter<> gcra(time.connection, kOwn, time.options);
  CHECK_THROWS_WITH(gcra.validate("k", 1, swl::Limit{std::int64_t{1} << 40, 1'000'000s}),
                    Catch::Contains("too fine to count exactly"));
  CHECK_NOTHROW(gcra.validate("k", 1, kFree));
  CHECK(time.connection.command({"DBSIZE"})->integer() == 0);  // validate sends nothing
}

TEST_CASE("the in-memory limiter takes a limit per call as the log in Redis does") {
  swl::testing::ManualClock clock;
  swl::LocalLimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  swl::LocalLimiter limiter(kOwn, options);
  CHECK(admittedUntilRefused(limiter, "free", kFree) == 3);
  CHECK(admittedUntilRefused(limiter, "pro", kPro) == 20);
  for (int i = 0; i < 8; ++i) REQUIRE(limiter.tryAcquire("k").allowed);  // recorded 1 us apart
  const swl::Decision refused = limiter.tryAcquire("k", 1, swl::Limit{5, 1s});
  CHECK_FALSE(refused.allowed);
  CHECK(refused.retry_after == 1s + 3us);  // 4 must leave: the fourth, recorded 3 us after the first
  CHECK(admittedUntilRefused(limiter, "k", kPro) == 12);
  CHECK(limiter.peek("k", kPro).used == 20);
  CHECK(limiter.tryAcquireMany({{"free", 1, kFree}, {"free", 1, kPro}})[1].decision.allowed);
}

TEST_CASE("a sharded limiter shares a limit given per call out over its shards") {
  ManualTime time;
  swl::ShardedLimiter<> limiter(time.connection, swl::Limit{40, 1s}, time.options, swl::Sharding(4));
  // Each shard holds a quarter of the call's limit: at most 8 admitted of a limit of 8, never more.
  int admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += limiter.tryAcquire("k", 1, swl::Limit{8, 1s}).allowed ? 1 : 0;
  CHECK(admitted == 8);
  const swl::Decision decision = limiter.tryAcquire("k", 1, swl::Limit{8, 1s});
  CHECK(decision.limit == 8);
  CHECK(limiter.peek("k", swl::Limit{8, 1s}).used == 8);
  CHECK_THROWS_WITH(limiter.tryAcquire("k", 1, swl::Limit{3, 1s}), Catch::Contains("cannot be shared out over 4"));
}

TEST_CASE("a tiered limiter repeats a cached refusal only under the limit it was made under") {
  ManualTime time;
  swl::TieredLimiter<> limiter(time.connection, kFree, time.options);
  CHECK(admittedUntilRefused(limiter, "k", kFree) == 3);
  CHECK(limiter.tryAcquire("k", 1, kFree).tier == swl::Tier::blocked_cache);
  const swl::Decision raised = limiter.tryAcquire("k", 1, kPro);  // an upgraded plan is served at once
  CHECK(raised.allowed);
  CHECK(raised.tier == swl::Tier::redis);
  CHECK(raised.limit == 20);
}

TEST_CASE("a leasing limiter gives its lease back when a call brings another limit, so a lowered one holds") {
  RedisServer server;
  auto connection = server.connect();
  swl::LeaseOptions leases;
  leases.duration = 500ms;
  swl::LeasingLimiter<> limiter(connection, swl::Limit{1000, 60s}, {}, leases);
  bool leased = false;
  for (int i = 0; i < 200 && !leased; ++i) leased = limiter.tryAcquire("k").tier == swl::Tier::lease;
  REQUIRE(leased);
  const std::int64_t used = limiter.peek("k").used;  // admitted, and leased but not yet used

  const swl::Limit lowered{50, 60s};
  const swl::Decision first = limiter.tryAcquire("k", 1, lowered);
  CHECK(first.tier != swl::Tier::lease);
  CHECK(first.limit == 50);
  // The old lease's unused units were given back: the window now holds what was used, and never more
  // than the lowered limit admits from here on.
  CHECK(limiter.peek("k").used < used);
  int admitted = 0;
  for (int i = 0; i < 200; ++i) admitted += limiter.tryAcquire("k", 1, lowered).allowed ? 1 : 0;
  CHECK(limiter.peek("k", lowered).used <= 50);
  CHECK(admitted <= 50);
}

TEST_CASE("a multi-limiter takes a limit per rule per call: a plan raises one rule and keeps the others") {
  ManualTime time;
  swl::MultiLimiter<> limiter(time.connection, {{"client", swl::Limit{2, 1s}}, {"route", swl::Limit{100, 1s}}},
                              time.options);
  CHECK(limiter.tryAcquire({"free", "GET /"}).decision.allowed);
  CHECK(limiter.tryAcquire({"free", "GET /"}).decision.allowed);
  CHECK_FALSE(limiter.tryAcquire({"free", "GET /"}).decision.allowed);
  const std::vector<swl::Limit> pro{swl::Limit{5, 1s}, swl::Limit{100, 1s}};
  int admitted = 0;
  for (int i = 0; i < 10; ++i) admitted += limiter.tryAcquire({"pro", "GET /"}, 1, pro).decision.allowed ? 1 : 0;
  CHECK(admitted == 5);
  const swl::MultiDecision refused = limiter.tryAcquire({"pro", "GET /"}, 1, pro);
  CHECK(refused.binding_name == "client");
  CHECK(refused.decision.limit == 5);
  CHECK(refused.rules[1].remaining == 100 - 7);
  CHECK_THROWS_WITH(limiter.tryAcquire({"pro", "GET /"}, 1, {swl::Limit{5, 1s}}),
                    Catch::Contains("1 limits for 2 rules"));
}
