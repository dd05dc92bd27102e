// MultiLimiter: several limits decided in one EVALSHA, all or nothing, on a real redis-server.

#include <swl/swl.hpp>

#include "support/manual_time.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::ManualTime;
using swl::test::RedisServer;

TEST_CASE("several limits under 8 threads: all or nothing, so the tightest binds and no rule pays for a refusal") {
  RedisServer server;
  swl::PoolOptions pool_options;
  pool_options.size = 8;
  pool_options.borrow_timeout = 5s;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), pool_options);
  swl::MultiLimiter<> limiter(pool, {{"user", swl::Limit{50, 60s}}, {"endpoint", swl::Limit{30, 60s}}});

  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 8; ++thread) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) admitted += limiter.tryAcquire({"user:1", "GET /search"}).decision.allowed;
    });
  }
  for (std::thread& thread : threads) thread.join();

  auto connection = server.connect();
  CHECK(admitted == 30);
  CHECK(logEntries(connection, "swl:user:user:1") == 30);  // not one entry for a refusal
  CHECK(logEntries(connection, "swl:endpoint:GET /search") == 30);
  CHECK(limiter.redisKey(0, "user:1") == "swl:user:user:1");

  // Another user meets the exhausted endpoint: refused, and their own log stays empty.
  const swl::MultiDecision refused = limiter.tryAcquire({"user:2", "GET /search"});
  CHECK_FALSE(refused);
  CHECK(refused.binding_name == "endpoint");
  CHECK(refused.rules[0].allowed);
  CHECK(refused.rules[0].remaining == 50);
  CHECK_FALSE(refused.rules[1].allowed);
  CHECK(integerReply(connection, {"EXISTS", "swl:user:user:2"}) == 0);
}

TEST_CASE_METHOD(ManualTime, "a refused multi-decision names the rule that refused and the longest wait") {
  swl::MultiLimiter<> limiter(connection, {{"second", swl::Limit{2, 1s}}, {"minute", swl::Limit{3, 60s}}}, options);
  const std::vector<std::string_view> keys{"user:42", "user:42"};

  CHECK(limiter.tryAcquire(keys));
  const swl::MultiDecision admitted = limiter.tryAcquire(keys);
  CHECK(admitted);
  CHECK(admitted.binding_name == "second");  // 0 left of 2, 1 left of 3
  CHECK(admitted.decision.remaining == 0);
  CHECK(admitted.rules[1].remaining == 1);

  swl::MultiDecision refused = limiter.tryAcquire(keys);
  CHECK_FALSE(refused);
  CHECK(refused.binding == 0);
  CHECK(refused.binding_name == "second");
  CHECK(refused.decision.retry_after == 1s);
  CHECK(refused.decision.limit == 2);
  CHECK(refused.rules[1].allowed);  // the minute would have admitted it, and recorded nothing
  CHECK(refused.rules[1].remaining == 1);

  clock.advance(1s);
  CHECK(limiter.tryAcquire(keys));  // the minute's third
  clock.advance(1s);
  refused = limiter.tryAcquire(keys);
  CHECK(refused.binding_name == "minute");
  CHECK(refused.decision.retry_after == 58s);

  // Both refuse: the longest wait binds, so waiting it out satisfies every rule.
  swl::MultiLimiter<> both(connection, {{"second", swl::Limit{1, 1s}}, {"minute", swl::Limit{1, 60s}}}, options,
                           "both");
  CHECK(both.tryAcquire(keys));
  refused = both.tryAcquire(keys);
  CHECK_FALSE(refused.rules[0].allowed);
  CHECK_FALSE(refused.rules[1].allowed);
  CHECK(refused.binding_name == "minute");
  CHECK(refused.decision.retry_after == 60s);
  clock.advance(refused.decision.retry_after);
  CHECK(both.tryAcquire(keys));
}

TEST_CASE("a multi-decision of cost above one is recorded whole in every rule, or not at all") {
  RedisServer server;
  auto connection = server.connect();
  swl::MultiLimiter<> limiter(connection, {{"a", swl::Limit{10, 60s}}, {"b", swl::Limit{6, 60s}}});
  CHECK(limiter.tryAcquire({"k", "k"}, 4));
  CHECK_FALSE(limiter.tryAcquire({"k", "k"}, 3));  // b has 2 left
  CHECK(logEntries(connection, "swl:a:k") == 1);   // one entry of four units
  const swl::MultiDecision last = limiter.tryAcquire({"k", "k"}, 2);
  CHECK(last);
  CHECK(last.rules[0].remaining == 4);
  CHECK(last.rules[1].remaining == 0);
  CHECK(logEntries(connection, "swl:b:k") == 2);  // 4 + 2 units in two entries
}

TEST_CASE("bad multi-limits are refused with a named reason, and Redis down meets the failure policy") {
  RedisServer server;
  auto connection = server.connect();
  using Rules = std::vector<swl::Rule>;
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, Rules{}), Catch::Contains("0 rules"));
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, Rules(10, {"x", swl::Limit{1, 1s}})), Catch::Contains("10 rules"));
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, {{"x", swl::Limit{1, 1s}}, {"x", swl::Limit{2, 1s}}}),
                    Catch::Contains("share a name"));
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, {{"{x}", swl::Limit{1, 1s}}}), Catch::Contains("brace"));
  CHECK_THROWS_AS(swl::MultiLimiter<>(connection, {{"x", swl::Limit{0, 1s}}}), swl::InvalidArgument);

  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  swl::MultiLimiter<> limiter(connection, {{"a", swl::Limit{3, 1s}}, {"b", swl::Limit{5, 1s}}}, fail_open);
  CHECK_THROWS_WITH(limiter.tryAcquire({"k"}), Catch::Contains("1 keys for 2 rules"));
  CHECK_THROWS_WITH(limiter.tryAcquire({"k", ""}), Catch::Contains("the key is empty"));
  CHECK_THROWS_WITH(limiter.tryAcquire({"k", "k"}, 4), Catch::Contains("exceeds the limit of 3"));

  server.stop();
  const swl::MultiDecision decision = limiter.tryAcquire({"k", "k"});
  CHECK(decision);
  CHECK(decision.decision.tier == swl::Tier::fail_open);
  swl::MultiLimiter<> throwing(connection, {{"a", swl::Limit{3, 1s}}});
  CHECK_THROWS_AS(throwing.tryAcquire({"k"}), swl::ConnectionError);
}
