// Every algorithm behind the same RedisLimiter: the sliding window log, the sliding counter, the fixed
// window and GCRA, each on a real redis-server, most on a clock the test moves by hand.

// First, as a service's own code may have it: swl's messages call their quoted(), never std::quoted,
// which argument-dependent lookup would otherwise find for a std::string.
#include <iomanip>

#include <swl/swl.hpp>

#include "support/edge_burst.hpp"
#include "support/manual_time.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::ManualTime;
using swl::test::RedisServer;

TEMPLATE_TEST_CASE("every algorithm admits a burst of exactly the limit, and a rejected request takes nothing", "",
                   swl::SlidingWindowLimiter<>, swl::SlidingCounterLimiter<>, swl::FixedWindowLimiter<>,
                   swl::GcraLimiter<>, swl::BucketedWindowLimiter<>) {
  ManualTime time;
  TestType limiter(time.connection, swl::Limit{10, 1s}, time.options);

  for (int i = 0; i < 10; ++i) {
    const swl::Decision decision = limiter.tryAcquire("user:42");
    REQUIRE(decision.allowed);
    CHECK(decision.remaining == 9 - i);
    CHECK(decision.limit == 10);
    CHECK(decision.reset_after > 0us);
  }
  swl::Decision refused = limiter.tryAcquire("user:42");
  REQUIRE_FALSE(refused.allowed);
  CHECK(refused.remaining == 0);
  CHECK(refused.retry_after > 0us);
  for (int i = 0; i < 100; ++i) CHECK(limiter.tryAcquire("user:42").retry_after == refused.retry_after);

  // retry_after is exact: a microsecond sooner is still too soon, then the request fits.
  time.clock.advance(refused.retry_after - 1us);
  CHECK_FALSE(limiter.tryAcquire("user:42").allowed);
  time.clock.advance(1us);
  CHECK(limiter.tryAcquire("user:42").allowed);
  CHECK(limiter.tryAcquire("user:43").allowed);  // another key has its own state
}

TEMPLATE_TEST_CASE("peek reports usage without consuming, and reset forgets the key", "", swl::SlidingWindowLimiter<>,
                   swl::SlidingCounterLimiter<>, swl::FixedWindowLimiter<>, swl::GcraLimiter<>,
                   swl::BucketedWindowLimiter<>) {
  ManualTime time;
  TestType limiter(time.connection, swl::Limit{10, 1s}, time.options);

  swl::Usage usage = limiter.peek("user:42");
  CHECK(usage.limit == 10);
  CHECK(usage.used == 0);
  CHECK(usage.remaining == 10);
  CHECK(usage.reset_after == 0us);
  CHECK(swl::test::integerReply(time.connection, {"EXISTS", limiter.redisKey("user:42")}) == 0);

  for (int i = 0; i < 4; ++i) REQUIRE(limiter.tryAcquire("user:42").allowed);
  for (int i = 0; i < 3; ++i) {  // peeking again and again changes nothing
    usage = limiter.peek("user:42");
    CHECK(usage.used == 4);
    CHECK(usage.remaining == 6);
    CHECK(usage.reset_after > 0us);
  }
  for (int i = 0; i < 6; ++i) CHECK(limiter.tryAcquire("user:42").allowed);
  CHECK_FALSE(limiter.tryAcquire("user:42").allowed);
  CHECK(limiter.peek("user:42").remaining == 0);

  CHECK(limiter.reset("user:42"));
  CHECK_FALSE(limiter.reset("user:42"));  // nothing left to forget
  CHECK(limiter.peek("user:42").used == 0);
  for (int i = 0; i < 10; ++i) CHECK(limiter.tryAcquire("user:42").allowed);
  CHECK_THROWS_AS(limiter.peek(""), swl::InvalidArgument);
  CHECK_THROWS_AS(limiter.reset(""), swl::InvalidArgument);
}

TEMPLATE_TEST_CASE("every algorithm runs on Redis's clock by default", "", swl::SlidingCounterLimiter<>,
                   swl::FixedWindowLimiter<>, swl::GcraLimiter<>, swl::BucketedWindowLimiter<>) {
  RedisServer server;
  auto connection = server.connect();
  TestType limiter(connection, swl::Limit{5, 60s});
  int admitted = 0;
  for (int i = 0; i < 20; ++i) admitted += limiter.tryAcquire("user:42", 1).allowed ? 1 : 0;
  CHECK(admitted == 5);
  const swl::Decision refused = limiter.tryAcquire("user:42");
  CHECK(refused.retry_after > 0us);
  // The sliding counter may have to wait into the next bucket, until the full one weighs little enough.
  CHECK(refused.retry_after < 2 * 60s);
  CHECK(swl::test::commandCalls(connection, "eval") == 0);
  CHECK(swl::test::integerReply(connection, {"PTTL", limiter.redisKey("user:42")}) > 0);  // idle keys expire
}

TEST_CASE(
    "the edge burst: the log and the bucketed window never exceed the limit, the others do, by as much as "
    "docs/algorithms.md says") {
  ManualTime time;
  const swl::Limit limit{100, 1s};
  swl::SlidingWindowLimiter<> log(time.connection, limit, time.options, swl::PrefixKey("log"));
  swl::SlidingCounterLimiter<> counter(time.connection, limit, time.options, swl::PrefixKey("counter"));
  swl::FixedWindowLimiter<> fixed(time.connection, limit, time.options, swl::PrefixKey("fixed"));
  swl::GcraLimiter<> gcra(time.connection, limit, time.options, swl::PrefixKey("gcra"));
  swl::BucketedWindowLimiter<> bucketed(time.connection, limit, time.options, swl::PrefixKey("bucketed"));

  const std::int64_t worst_log = swl::test::worstWindowInEdgeBurst(log, time.clock, "k");
  const std::int64_t worst_counter = swl::test::worstWindowInEdgeBurst(counter, time.clock, "k");
  const std::int64_t worst_fixed = swl::test::worstWindowInEdgeBurst(fixed, time.clock, "k");
  const std::int64_t worst_gcra = swl::test::worstWindowInEdgeBurst(gcra, time.clock, "k");
  const std::int64_t worst_bucketed = swl::test::worstWindowInEdgeBurst(bucketed, time.clock, "k");
  WARN("most admitted in one window, limit 100: log " << worst_log << ", counter " << worst_counter << ", fixed "
                                                      << worst_fixed << ", gcra " << worst_gcra << ", bucketed "
                                                      << worst_bucketed);
  CHECK(worst_log == 100);
  CHECK(worst_bucketed == 100);
  CHECK(worst_fixed == 200);
  CHECK(worst_counter > 100);
  CHECK(worst_counter < 200);
  CHECK(worst_gcra > 100);
  CHECK(worst_gcra <= 200);
}

TEST_CASE("the counters share costs, shards and the rejected-request penalty with the log") {
  ManualTime time;
  swl::FixedWindowLimiter<> fixed(time.connection, swl::Limit{10, 1s}, time.options);
  CHECK(fixed.tryAcquire("a", 7).remaining == 3);
  CHECK_FALSE(fixed.tryAcquire("a", 4).allowed);  // rejected whole, nothing taken
  CHECK(fixed.tryAcquire("a", 3).allowed);

  swl::ShardedLimiter<swl::Gcra> sharded(time.connection, swl::Limit{12, 1s}, time.options, swl::Sharding(3));
  int admitted = 0;
  for (int i = 0; i < 100; ++i) admitted += sharded.tryAcquire("hot").allowed ? 1 : 0;
  CHECK(admitted == 12);
  CHECK(sharded.peek("hot").used == 12);  // the shards summed
  CHECK(sharded.reset("hot"));
  CHECK(sharded.peek("hot").used == 0);

  swl::LimiterOptions penalty = time.options;
  penalty.rejected = swl::RejectedRequests::counted;
  swl::SlidingCounterLimiter<> strict(time.connection, swl::Limit{2, 1s}, penalty, swl::PrefixKey("strict"));
  swl::SlidingCounterLimiter<> lenient(time.connection, swl::Limit{2, 1s}, time.options, swl::PrefixKey("lenient"));
  for (int i = 0; i < 6; ++i) strict.tryAcquire("k"), lenient.tryAcquire("k");
  // Four rejected requests kept counting against the strict one: it must wait longer.
  CHECK(strict.tryAcquire("k").retry_after > lenient.tryAcquire("k").retry_after);
}

TEST_CASE("counters refuse limits they cannot count exactly, naming the limit") {
  RedisServer server;
  auto connection = server.connect();
  const swl::Limit too_fine{1'000'000, std::chrono::hours(24 * 7)};
  CHECK_THROWS_WITH(swl::SlidingCounterLimiter<>(connection, too_fine),
                    Catch::Contains("swl::SlidingCounterLimiter") && Catch::Contains("2^53"));
  CHECK_THROWS_AS(swl::GcraLimiter<>(connection, too_fine), swl::InvalidArgument);
  swl::FixedWindowLimiter<> fixed(connection, too_fine);  // a plain counter has no such bound
  CHECK(fixed.tryAcquire("k").allowed);
  swl::SlidingCounterLimiter<> million_per_minute(connection, swl::Limit{1'000'000, std::chrono::minutes(1)});
  CHECK(million_per_minute.tryAcquire("k", 999'999).remaining == 1);
  CHECK_THROWS_WITH(swl::GcraLimiter<>(connection, swl::Limit{10, 1s}).tryAcquire("k", 11),
                    Catch::Contains("swl::GcraLimiter::tryAcquire") && Catch::Contains("cost 11"));
}

TEST_CASE("acquire waits for a permit by sleeping, admits exactly, and gives up before a deadline it cannot meet") {
  RedisServer server;
  swl::PoolOptions pool_options;
  pool_options.size = 4;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), pool_options);
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{5, 200ms});

  // 4 threads want 5 permits each: 20 permits take at least three further windows.
  const auto started = std::chrono::steady_clock::now();
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 4; ++thread) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) admitted += limiter.acquire("crawler", 1, 5s).allowed ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(admitted == 20);
  CHECK(took >= 600ms);
  auto connection = server.connect();
  // Sleeping, not spinning: a handful of refusals per thread and window, not thousands.
  CHECK(swl::test::commandCalls(connection, "evalsha") < 20 + 4 * 4 * 4);

  // A deadline the next permit cannot meet: refused at once, without sleeping.
  for (int i = 0; i < 5; ++i) limiter.tryAcquire("impatient");
  const auto asked = std::chrono::steady_clock::now();
  const swl::Decision refused = limiter.acquire("impatient", 1, 50ms);
  CHECK_FALSE(refused.allowed);
  CHECK(refused.retry_after > 50ms);
  CHECK(std::chrono::steady_clock::now() - asked < 50ms);
  // A deadline it can meet: admitted after about one window.
  const swl::Decision waited = limiter.acquire("impatient", 1, std::chrono::steady_clock::now() + 1s);
  CHECK(waited.allowed);
  CHECK(std::chrono::steady_clock::now() - asked >= 150ms);
}

TEMPLATE_TEST_CASE("with counted rejections, a client that waits exactly retry_after is admitted, for every algorithm",
                   "", swl::SlidingWindowLimiter<>, swl::SlidingCounterLimiter<>, swl::FixedWindowLimiter<>,
                   swl::GcraLimiter<>, swl::BucketedWindowLimiter<>) {
  ManualTime time;
  time.options.rejected = swl::RejectedRequests::counted;
  TestType limiter(time.connection, swl::Limit{1, 60s}, time.options);
  REQUIRE(limiter.tryAcquire("k").allowed);
  const swl::Decision refused = limiter.tryAcquire("k");  // refused, and recorded as the penalty
  REQUIRE_FALSE(refused.allowed);
  // Waiting a microsecond less is too soon (and is counted too); the client that waits the whole
  // retry_after of its last refusal gets in, and is never locked out.
  time.clock.advance(refused.retry_after);
  CHECK(limiter.tryAcquire("k").allowed);
}

TEST_CASE("GCRA with counted rejections: each refusal moves the wait, and waiting it out admits (L=1, W=60 s)") {
  ManualTime time;
  time.options.rejected = swl::RejectedRequests::counted;
  swl::GcraLimiter<> limiter(time.connection, swl::Limit{1, 60s}, time.options);
  CHECK(limiter.tryAcquire("k").allowed);
  const swl::Decision refused = limiter.tryAcquire("k");
  CHECK_FALSE(refused.allowed);
  CHECK(refused.retry_after == 120s);  // the refusal itself took the next 60 s
  time.clock.advance(120s - 1us);
  CHECK_FALSE(limiter.tryAcquire("k").allowed);  // too soon, and counted: the wait moves again
  const swl::Decision again = limiter.tryAcquire("k");
  time.clock.advance(again.retry_after);
  CHECK(limiter.tryAcquire("k").allowed);
}

TEMPLATE_TEST_CASE("peek reports what a window holds past its limit when refusals are counted", "",
                   swl::SlidingWindowLimiter<>, swl::FixedWindowLimiter<>, swl::GcraLimiter<>,
                   swl::BucketedWindowLimiter<>) {
  ManualTime time;
  time.options.rejected = swl::RejectedRequests::counted;
  TestType limiter(time.connection, swl::Limit{2, 60s}, time.options);
  for (int i = 0; i < 5; ++i) limiter.tryAcquire("k");
  const swl::Usage usage = limiter.peek("k");
  CHECK(usage.used == 5);
  CHECK(usage.remaining == 0);
  CHECK(limiter.tryAcquire("k").remaining == 0);  // a Decision's room is never below 0
}
