// LocalLimiter: the sliding window log in memory. Its decisions are checked against the Redis script's
// on the same clock, to the microsecond; then threads, bounded memory and bad input.

#include <swl/swl.hpp>

#include "support/manual_time.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

swl::LocalLimiterOptions manualOptions(const swl::testing::ManualClock& clock) {
  swl::LocalLimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  return options;
}

}  // namespace

TEST_CASE("the in-memory window admits exactly the limit and its retry_after is exact") {
  swl::testing::ManualClock clock;
  swl::LocalLimiter limiter(swl::Limit{10, 1s}, manualOptions(clock));

  for (int i = 0; i < 10; ++i) {
    const swl::Decision decision = limiter.tryAcquire("user:42");
    REQUIRE(decision.allowed);
    CHECK(decision.remaining == 9 - i);
    CHECK(decision.tier == swl::Tier::in_memory);
    clock.advance(10ms);
  }
  const swl::Decision refused = limiter.tryAcquire("user:42");
  REQUIRE_FALSE(refused.allowed);
  CHECK(refused.retry_after == 900ms);  // the first entry, 90 ms old, leaves after the rest of its second
  CHECK(refused.reset_after == 1s - 10ms);
  clock.advance(refused.retry_after - 1us);
  CHECK_FALSE(limiter.tryAcquire("user:42").allowed);
  clock.advance(1us);
  CHECK(limiter.tryAcquire("user:42").allowed);
  CHECK(limiter.tryAcquire("user:43").allowed);
}

TEST_CASE("the in-memory window decides exactly as the Redis script on the same clock") {
  swl::test::ManualTime time;
  swl::SlidingWindowLimiter<> redis(time.connection, swl::Limit{20, 1s}, time.options);
  swl::LocalLimiter local(swl::Limit{20, 1s}, manualOptions(time.clock));

  std::mt19937 random(42);
  std::uniform_int_distribution<int> step_us(0, 120'000), cost(1, 6), key(0, 2), back(0, 30);
  for (int i = 0; i < 2000; ++i) {
    time.clock.advance(std::chrono::microseconds(step_us(random)));
    if (back(random) == 0) time.clock.advance(-50ms);  // a clock stepping back: both keep their logs sorted
    const std::string user = "user:" + std::to_string(key(random));
    const std::int64_t units = cost(random);
    const swl::Decision expected = redis.tryAcquire(user, units);
    const swl::Decision decided = local.tryAcquire(user, units);
    INFO("request " << i << " for " << user << " of cost " << units);
    REQUIRE(decided.allowed == expected.allowed);
    REQUIRE(decided.remaining == expected.remaining);
    REQUIRE(decided.retry_after == expected.retry_after);
    REQUIRE(decided.reset_after == expected.reset_after);
  }
  for (const char* user : {"user:0", "user:1", "user:2"}) {
    CHECK(local.peek(user).used == redis.peek(user).used);
    CHECK(local.peek(user).reset_after == redis.peek(user).reset_after);
  }
}

TEST_CASE("threads sharing an in-memory limiter admit exactly the limit") {
  swl::LocalLimiter limiter(swl::Limit{500, 1h});
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 250; ++i) {
        if (limiter.tryAcquire("shared").allowed) admitted.fetch_add(1);
        limiter.tryAcquire("own:" + std::to_string(t) + ":" + std::to_string(i));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(admitted.load() == 500);
  CHECK(limiter.peek("shared").used == 500);
  CHECK(limiter.peek("own:3:17").used == 1);
}

TEST_CASE("the in-memory limiter holds at most max_keys keys and drops idle ones by itself") {
  swl::testing::ManualClock clock;
  swl::LocalLimiterOptions options = manualOptions(clock);
  options.max_keys = 100;
  swl::LocalLimiter limiter(swl::Limit{5, 1s}, options);

  for (int i = 0; i < 1000; ++i) limiter.tryAcquire("key:" + std::to_string(i));
  CHECK(limiter.keys() == 100);
  CHECK(limiter.evictions() == 900);         // active keys went, least recently used first
  CHECK(limiter.peek("key:999").used == 1);  // the newest keys are kept
  CHECK(limiter.peek("key:0").used == 0);    // an evicted key starts over

  clock.advance(1s);  // every window empties: the keys are idle now
  for (int i = 0; i < 60; ++i) limiter.tryAcquire("active");
  CHECK(limiter.keys() == 1);
  CHECK(limiter.evictions() == 900);  // dropping idle keys loses nothing

  // A key holds one entry per admission at most, however many requests it refuses.
  for (int i = 0; i < 10'000; ++i) limiter.tryAcquire("flooded");
  CHECK(limiter.peek("flooded").used == 5);
}

TEST_CASE("the in-memory limiter peeks, resets, waits and batches like the Redis ones") {
  swl::testing::ManualClock clock;
  swl::LocalLimiter limiter(swl::Limit{3, 1s}, manualOptions(clock));
  limiter.tryAcquire("k", 2);
  swl::Usage usage = limiter.peek("k");
  CHECK(usage.used == 2);
  CHECK(usage.remaining == 1);
  CHECK(usage.reset_after == 1s);
  CHECK(limiter.peek("k").used == 2);  // peeking recorded nothing
  CHECK(limiter.reset("k"));
  CHECK_FALSE(limiter.reset("k"));
  CHECK(limiter.peek("k").used == 0);

  const std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany({{"a", 3}, {"a", 1}, {"", 1}, {"b", 4}});
  CHECK(outcomes[0].value().allowed);
  CHECK_FALSE(outcomes[1].value().allowed);
  CHECK_THROWS_AS(outcomes[2].value(), swl::InvalidArgument);
  CHECK_THROWS_AS(outcomes[3].value(), swl::InvalidArgument);

  // acquire sleeps retry_after on the host clock: 2 per 100 ms, so the third permit comes ~100 ms later.
  swl::LocalLimiter hosted(swl::Limit{2, 100ms});
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) REQUIRE(hosted.acquire("w", 1, 2s).allowed);
  CHECK(std::chrono::steady_clock::now() - started >= 90ms);
  CHECK_FALSE(hosted.acquire("w", 2, 10ms).allowed);  // the next permit lies past the deadline: no sleep
}

TEST_CASE("the in-memory limiter refuses bad input and configurations with a clear error") {
  using Catch::Matchers::Contains;
  swl::LocalLimiter limiter(swl::Limit{3, 1s});
  CHECK_THROWS_WITH(limiter.tryAcquire(""), Contains("the key is empty"));
  CHECK_THROWS_WITH(limiter.tryAcquire("k", 0), Contains("cost 0 is not positive (key 'k')"));
  CHECK_THROWS_WITH(limiter.tryAcquire("k", 4), Contains("exceeds the limit of 3"));
  CHECK_THROWS_AS(limiter.peek(""), swl::InvalidArgument);
  CHECK(limiter.peek("k").used == 0);  // nothing recorded by the refused calls

  CHECK_THROWS_WITH(swl::LocalLimiter(swl::Limit{0, 1s}), Contains("max_requests 0"));
  CHECK_THROWS_WITH(swl::LocalLimiter(swl::Limit{1, 0s}), Contains("window of 0 us"));
  swl::LocalLimiterOptions redis_clock;
  redis_clock.clock = swl::Clock::redis();
  CHECK_THROWS_WITH(swl::LocalLimiter(swl::Limit{1, 1s}, redis_clock), Contains("Clock::redis() needs Redis"));
  swl::LocalLimiterOptions no_keys;
  no_keys.max_keys = 0;
  CHECK_THROWS_WITH(swl::LocalLimiter(swl::Limit{1, 1s}, no_keys), Contains("max_keys is 0"));
}

TEST_CASE("the observer sees every in-memory decision and error") {
  swl::LocalLimiterOptions options;
  std::vector<std::string> seen;
  options.observer = [&](const swl::DecisionEvent& event) {
    seen.push_back(std::string(event.key) + ":" + std::string(swl::toString(event.verdict)) + ":" +
                   std::string(swl::toString(event.tier)) + (event.error ? ":error" : ""));
    CHECK(event.latency >= 0ns);
  };
  swl::LocalLimiter limiter(swl::Limit{1, 1h}, options);
  limiter.tryAcquire("a");
  limiter.tryAcquire("a");
  CHECK_THROWS(limiter.tryAcquire("a", 0));
  CHECK(seen == std::vector<std::string>{"a:allowed:in_memory", "a:rejected:in_memory", "a:error:in_memory:error"});
}
