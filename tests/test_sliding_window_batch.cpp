// tryAcquireMany: many decisions in one pipelined round trip.
#include <swl/swl.hpp>

#include "support/decisions.hpp"
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
using swl::test::RedisServer;
using swl::test::sameDecision;
using swl::test::textReply;

TEST_CASE("a batch decides exactly as the same single calls would, in input order") {
  RedisServer server;
  auto connection = server.connect();
  swl::testing::ManualClock clock;
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  swl::SlidingWindowLimiter<> single(connection, swl::Limit{5, 10s}, options, swl::PrefixKey("single"));
  swl::SlidingWindowLimiter<> batched(connection, swl::Limit{5, 10s}, options, swl::PrefixKey("batch"));

  const std::vector<swl::AcquireRequest> requests = {{"a", 1}, {"b", 3}, {"a", 2}, {"b", 3}, {"a", 2},
                                                     {"c", 5}, {"a", 1}, {"c", 1}, {"b", 2}, {"a", 1}};
  for (int round = 0; round < 4; ++round) {
    std::vector<swl::Outcome> outcomes = batched.tryAcquireMany(requests);
    REQUIRE(outcomes.size() == requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      INFO("round " << round << ", request " << i);
      REQUIRE(outcomes[i].ok());
      CHECK(sameDecision(outcomes[i].value(), single.tryAcquire(requests[i].key, requests[i].cost)));
    }
    clock.advance(3s);
  }
  CHECK(logEntries(connection, "batch:a") == logEntries(connection, "single:a"));
  // The first batch went out before the script was loaded: its 10 calls met NOSCRIPT once, one SCRIPT LOAD.
  CHECK(commandCalls(connection, "evalsha") == 2 * 4 * 10 + 10);
  CHECK(commandCalls(connection, "script|load") == 1);
}

TEST_CASE("a batch of 1,000 requests on one key admits exactly the first 100") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, 60s});
  std::vector<swl::AcquireRequest> requests(1000, swl::AcquireRequest{"hot"});
  std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany(requests);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    INFO("request " << i);
    CHECK(outcomes[i].value().allowed == (i < 100));
  }
  CHECK(logEntries(connection, "swl:hot") == 100);
}

TEST_CASE("one request's error in a batch does not spoil the others") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s});
  textReply(connection, {"SET", "swl:not-a-zset", "text"});

  std::vector<swl::Outcome> outcomes =
      limiter.tryAcquireMany({{"first"}, {"not-a-zset"}, {"", 1}, {"second", 0}, {"third", 11}, {"last", 2}});
  REQUIRE(outcomes.size() == 6);
  CHECK(outcomes[0].value().allowed);
  CHECK_THROWS_WITH(outcomes[1].value(), Catch::Contains("WRONGTYPE"));
  CHECK_THROWS_AS(outcomes[1].value(), swl::ReplyError);
  CHECK_THROWS_WITH(outcomes[2].value(), Catch::Contains("key is empty"));
  CHECK_THROWS_WITH(outcomes[3].value(), Catch::Contains("cost 0 is not positive"));
  CHECK_THROWS_WITH(outcomes[4].value(), Catch::Contains("exceeds the limit"));
  CHECK(outcomes[5].value().remaining == 8);
  for (int i : {1, 2, 3, 4}) CHECK_FALSE(outcomes[i].decision.allowed);  // never admitted by accident
  CHECK(logEntries(connection, "swl:first") == 1);
  CHECK(logEntries(connection, "swl:last") == 1);  // one entry of two units
}

TEST_CASE("a batch while Redis is down answers each request with the failure policy") {
  RedisServer server;
  auto connection = server.connect();
  connection.ping();
  server.stop();
  const std::vector<swl::AcquireRequest> requests = {{"a"}, {"b", 2}, {"c"}};

  SECTION("throw: every outcome holds the connection error") {
    swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s});
    for (const swl::Outcome& outcome : limiter.tryAcquireMany(requests)) {
      CHECK_THROWS_AS(outcome.value(), swl::ConnectionError);
      CHECK_FALSE(outcome.decision.allowed);
    }
  }
  SECTION("allow: every request is admitted as fail_open") {
    swl::LimiterOptions options;
    options.on_failure = swl::FailurePolicy::allow;
    swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s}, options);
    std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany(requests);
    for (const swl::Outcome& outcome : outcomes) {
      CHECK(outcome.ok());
      CHECK(outcome.value().allowed);
      CHECK(outcome.value().tier == swl::Tier::fail_open);
    }
    CHECK(outcomes[1].value().remaining == 8);
  }
  SECTION("deny: every request is rejected as fail_closed") {
    swl::LimiterOptions options;
    options.on_failure = swl::FailurePolicy::deny;
    swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s}, options);
    for (const swl::Outcome& outcome : limiter.tryAcquireMany(requests)) {
      CHECK_FALSE(outcome.value().allowed);
      CHECK(outcome.value().tier == swl::Tier::fail_closed);
    }
  }
}

TEST_CASE("a batch over a pool recovers from a flushed script cache") {
  RedisServer server;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), swl::PoolOptions{2});
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{3, 60s});
  auto observer = server.connect();
  for (int round = 0; round < 2; ++round) {
    textReply(observer, {"SCRIPT", "FLUSH"});
    std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany({{"x"}, {"y"}});
    for (const swl::Outcome& outcome : outcomes) CHECK(outcome.value().allowed);
  }
  CHECK(commandCalls(observer, "script|load") == 2);
  CHECK(logEntries(observer, "swl:x") == 2);
}

TEST_CASE("an empty batch sends nothing") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 60s});
  CHECK(limiter.tryAcquireMany({}).empty());
  CHECK(commandCalls(connection, "evalsha") == 0);
}
