// TieredLimiter: Redis's refusals cached locally until their retry_after, and an in-memory share of
// the limit while Redis cannot answer. Real redis-server; the clock moves by hand where time matters.

#include <swl/swl.hpp>

#include "support/manual_time.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using swl::test::commandCalls;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::ManualTime;

TEST_CASE("a refused key is refused locally until its retry_after, with no round trip") {
  ManualTime time;
  swl::TieredLimiter<> limiter(time.connection, swl::Limit{3, 1s}, time.options);
  auto admin = time.server.connect();

  for (int i = 0; i < 3; ++i) {
    REQUIRE(limiter.tryAcquire("abuser").allowed);
    time.clock.advance(100ms);
  }
  const swl::Decision refused = limiter.tryAcquire("abuser");
  REQUIRE_FALSE(refused.allowed);
  CHECK(refused.tier == swl::Tier::redis);
  CHECK(refused.retry_after == 700ms);
  const long long calls = commandCalls(admin, "evalsha");
  CHECK(calls == 5);  // the first call met an empty script cache: NOSCRIPT, then again

  for (int i = 0; i < 1000; ++i) {
    const swl::Decision cached = limiter.tryAcquire("abuser");
    REQUIRE_FALSE(cached.allowed);
    REQUIRE(cached.tier == swl::Tier::blocked_cache);
    REQUIRE(cached.retry_after == refused.retry_after);
  }
  time.clock.advance(200ms);
  CHECK(limiter.tryAcquire("abuser").retry_after == 500ms);  // counts down with the clock
  CHECK(commandCalls(admin, "evalsha") == calls);            // not one of those reached Redis

  CHECK(limiter.tryAcquire("someone else").tier == swl::Tier::redis);
  time.clock.advance(500ms);  // the retry_after has passed: Redis decides again, and admits
  const swl::Decision again = limiter.tryAcquire("abuser");
  CHECK(again.allowed);
  CHECK(again.tier == swl::Tier::redis);
}

TEST_CASE("the refusal cache answers only what Redis would answer") {
  ManualTime time;
  swl::TieredLimiter<> limiter(time.connection, swl::Limit{3, 1s}, time.options);
  REQUIRE(limiter.tryAcquire("k", 2).allowed);
  REQUIRE_FALSE(limiter.tryAcquire("k", 2).allowed);
  CHECK(limiter.tryAcquire("k", 3).tier == swl::Tier::blocked_cache);  // larger: refused here
  const swl::Decision smaller = limiter.tryAcquire("k", 1);            // smaller: it may fit, so Redis decides
  CHECK(smaller.tier == swl::Tier::redis);
  CHECK(smaller.allowed);

  REQUIRE_FALSE(limiter.tryAcquire("k", 1).allowed);
  CHECK(limiter.reset("k"));  // an operator's reset lifts the local refusal too
  CHECK(limiter.tryAcquire("k", 3).allowed);

  // Counted rejections must reach Redis, which records each: no cache then.
  swl::LimiterOptions counted = time.options;
  counted.rejected = swl::RejectedRequests::counted;
  swl::TieredLimiter<> penalised(time.connection, swl::Limit{1, 1s}, counted);
  penalised.tryAcquire("p");
  for (int i = 0; i < 3; ++i) CHECK(penalised.tryAcquire("p").tier == swl::Tier::redis);
  CHECK(logEntries(time.connection, "swl:p") == 4);
}

TEST_CASE("insurance decides with this instance's share while Redis is down, and hands back") {
  ManualTime time;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", time.server.port(), swl::PoolOptions{2}, swl::test::failFast());
  swl::TierOptions tiers;
  tiers.instances = 4;
  tiers.redis_retry_interval = 1s;
  swl::TieredLimiter<> limiter(pool, swl::Limit{40, 10s}, time.options, tiers);

  REQUIRE(limiter.tryAcquire("k").tier == swl::Tier::redis);
  time.server.stop();
  for (int i = 0; i < 10; ++i) {
    const swl::Decision insured = limiter.tryAcquire("k");
    REQUIRE(insured.allowed);
    CHECK(insured.tier == swl::Tier::insurance);
    CHECK(insured.limit == 10);
  }
  const swl::Decision over = limiter.tryAcquire("k");
  CHECK_FALSE(over.allowed);
  CHECK(over.tier == swl::Tier::insurance);
  CHECK(over.retry_after == 10s);
  CHECK(limiter.insured());

  time.server.start();  // back, empty: still insured until the retry interval lets one call ask
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::insurance);
  time.clock.advance(1s);
  const swl::Decision back = limiter.tryAcquire("k");
  CHECK(back.tier == swl::Tier::redis);
  CHECK(back.allowed);
  CHECK_FALSE(limiter.insured());
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::redis);
}

TEST_CASE("a frozen Redis costs an insured limiter one timeout per retry interval, not one per call") {
  swl::test::RedisServer server;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), swl::PoolOptions{1}, swl::test::failFast(200ms));
  swl::TierOptions tiers;
  tiers.instances = 2;
  tiers.redis_retry_interval = 2s;
  swl::TieredLimiter<> limiter(pool, swl::Limit{100, 10s}, {}, tiers);
  REQUIRE(limiter.tryAcquire("k").tier == swl::Tier::redis);

  server.pause();
  auto started = std::chrono::steady_clock::now();
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::insurance);  // waited for the timeout
  CHECK(std::chrono::steady_clock::now() - started >= 200ms);
  started = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) CHECK(limiter.tryAcquire("k").tier == swl::Tier::insurance);
  CHECK(std::chrono::steady_clock::now() - started < 150ms);  // 20 calls, no timeout among them
  server.resume();
}

TEST_CASE("without insurance the failure policy answers, and the observer sees each tier and error") {
  ManualTime time;
  std::vector<std::string> seen;
  swl::LimiterOptions options = time.options;
  options.on_failure = swl::FailurePolicy::allow;
  options.observer = [&](const swl::DecisionEvent& event) {
    seen.push_back(std::string(swl::toString(event.verdict)) + ":" + std::string(swl::toString(event.tier)) +
                   (event.error ? ":error" : ""));
  };
  swl::TieredLimiter<> limiter(time.connection, swl::Limit{1, 1s}, options);
  limiter.tryAcquire("k");
  limiter.tryAcquire("k");
  limiter.tryAcquire("k");
  CHECK_THROWS_AS(limiter.tryAcquire("k", 2), swl::InvalidArgument);
  time.server.stop();
  const swl::Decision open = limiter.tryAcquire("other");
  CHECK(open.allowed);
  CHECK(open.tier == swl::Tier::fail_open);
  CHECK(seen == std::vector<std::string>{"allowed:redis", "rejected:redis", "rejected:blocked_cache",
                                         "error:redis:error", "allowed:fail_open:error"});
}

TEST_CASE("tiers refuse a share that leaves nothing, with a clear error") {
  using Catch::Matchers::Contains;
  ManualTime time;
  swl::TierOptions tiers;
  tiers.instances = 5;
  CHECK_THROWS_WITH(swl::TieredLimiter<>(time.connection, swl::Limit{4, 1s}, time.options, tiers),
                    Contains("a limit of 4 leaves nothing to share among 5 instances"));
  tiers.instances = -1;
  CHECK_THROWS_WITH(swl::TieredLimiter<>(time.connection, swl::Limit{4, 1s}, time.options, tiers),
                    Contains("instances -1 is negative"));
}
