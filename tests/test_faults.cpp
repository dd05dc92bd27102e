// Fault injection with real redis-server processes: the faults a deployment meets (a frozen server,
// killed connections, a restart that loses everything, a full memory, an outage under insurance), and
// what the same limiter object answers through each and after it. Every test is bounded in time.

#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::commandCalls;
using swl::test::failFast;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::RedisServer;
using swl::test::textReply;

TEST_CASE("a frozen Redis: every call returns within the command timeout with the policy's answer, then resumes") {
  RedisServer server;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), swl::PoolOptions{4, 500ms}, failFast(250ms));
  swl::LimiterOptions options;
  options.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{1'000'000, 1h}, options);
  REQUIRE(limiter.tryAcquire("warm").tier == swl::Tier::redis);

  std::atomic<bool> frozen{false}, thawed{false}, stop{false};
  std::atomic<long long> slowest_us{0}, policy_answers{0}, redis_after_thaw{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      while (!stop.load()) {
        const auto started = std::chrono::steady_clock::now();
        const swl::Decision decision = limiter.tryAcquire("caller:" + std::to_string(t));
        const auto took =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
        if (frozen.load() && !thawed.load()) {
          long long seen = slowest_us.load();
          while (took.count() > seen && !slowest_us.compare_exchange_weak(seen, took.count())) {
          }
        }
        if (decision.tier == swl::Tier::fail_closed) policy_answers.fetch_add(1);
        if (thawed.load() && decision.tier == swl::Tier::redis) redis_after_thaw.fetch_add(1);
      }
    });
  }
  std::this_thread::sleep_for(100ms);
  server.pause();
  frozen = true;
  std::this_thread::sleep_for(1500ms);
  server.resume();
  thawed = true;
  const auto resumed_by = std::chrono::steady_clock::now() + 3s;
  while (redis_after_thaw.load() < 100 && std::chrono::steady_clock::now() < resumed_by) {
    std::this_thread::sleep_for(10ms);
  }
  stop = true;
  for (std::thread& caller : callers) caller.join();

  CHECK(policy_answers.load() >= 4);  // each thread met the freeze at least once
  CHECK(slowest_us.load() < std::chrono::microseconds(250ms + 150ms).count());  // the timeout, plus a margin
  CHECK(redis_after_thaw.load() >= 100);  // decisions resumed, with the same limiter
}

TEST_CASE(
    "calls a frozen Redis left unanswered are never counted once it resumes if the failure policy refused them, "
    "and are if it admitted them") {
  RedisServer server;
  const swl::FailurePolicy policy = GENERATE(swl::FailurePolicy::deny, swl::FailurePolicy::allow);
  swl::LimiterOptions options;
  options.on_failure = policy;
  // Four connections of their own, each connected (its handshake read Redis's clock) before the freeze.
  std::vector<swl::Connection> connections;
  std::vector<swl::SlidingWindowLimiter<>> limiters;
  for (int i = 0; i < 4; ++i) connections.push_back(server.connect(failFast(250ms)));
  for (swl::Connection& connection : connections) {
    limiters.emplace_back(connection, swl::Limit{100, 1h}, options);
    REQUIRE(limiters.back().tryAcquire("warm").tier == swl::Tier::redis);
  }
  server.pause();
  std::vector<swl::Decision> single(3);
  std::vector<std::thread> callers;
  for (int i = 0; i < 3; ++i) {
    callers.emplace_back([&, i] { single[i] = limiters[i].tryAcquire("frozen:" + std::to_string(i)); });
  }
  // A batch, pipelined on the fourth connection: one write, no reply.
  std::vector<swl::AcquireRequest> batch;
  std::vector<std::string> batch_keys;
  for (int i = 0; i < 10; ++i) batch_keys.push_back("batch:" + std::to_string(i));
  for (const std::string& key : batch_keys) batch.push_back({key, 1});
  const std::vector<swl::Outcome> batched = limiters[3].tryAcquireMany(batch);
  for (std::thread& caller : callers) caller.join();
  server.resume();

  const swl::Tier answered = policy == swl::FailurePolicy::deny ? swl::Tier::fail_closed : swl::Tier::fail_open;
  for (const swl::Decision& decision : single) CHECK(decision.tier == answered);
  for (const swl::Outcome& outcome : batched) CHECK(outcome.value().tier == answered);
  // Redis ran every call it had read once it resumed: under deny each ran past its deadline and
  // recorded nothing; under allow each was served, and is counted.
  swl::Connection asking = server.connect();
  swl::SlidingWindowLimiter<> reader(asking, swl::Limit{100, 1h});
  const std::int64_t counted_each = policy == swl::FailurePolicy::deny ? 0 : 1;
  for (int i = 0; i < 3; ++i) CHECK(reader.peek("frozen:" + std::to_string(i)).used == counted_each);
  for (const std::string& key : batch_keys) CHECK(reader.peek(key).used == counted_each);
  // The same limiters decide exactly afterwards.
  CHECK(limiters[0].tryAcquire("frozen:0").remaining == 99 - counted_each);
}

TEST_CASE("connections killed by the server are reopened by the next call, and nothing is counted twice") {
  RedisServer server;
  auto admin = server.connect();
  auto connection = server.connect(failFast(250ms));
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 1h});

  for (int i = 0; i < 10; ++i) {
    CHECK(integerReply(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= (i == 0 ? 0 : 1));
    swl::test::idlePastCheck();
    const swl::Decision decision = limiter.tryAcquire("k");
    REQUIRE(decision.allowed);
    CHECK(decision.tier == swl::Tier::redis);
    CHECK(decision.remaining == 9 - i);
  }
  integerReply(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  swl::test::idlePastCheck();
  CHECK_FALSE(limiter.tryAcquire("k").allowed);
  CHECK(logEntries(admin, "swl:k") == 10);  // one entry per admission, none twice

  // A batch goes out on a fresh connection as well.
  integerReply(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  swl::test::idlePastCheck();
  const std::vector<swl::Outcome> batch = limiter.tryAcquireMany({{"a", 1}, {"b", 1}});
  CHECK(batch[0].value().allowed);
  CHECK(batch[1].value().allowed);
  CHECK(logEntries(admin, "swl:a") == 1);
}

TEST_CASE("a Redis restarted empty, script cache included, is used again by the same limiter") {
  RedisServer server;
  auto connection = server.connect(failFast(250ms));
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 1h});
  for (int i = 0; i < 3; ++i) REQUIRE(limiter.tryAcquire("k").allowed);
  REQUIRE_FALSE(limiter.tryAcquire("k").allowed);

  server.stop();
  server.start();  // same port, nothing in it
  swl::test::idlePastCheck();
  const swl::Decision after = limiter.tryAcquire("k");
  CHECK(after.allowed);  // the window was lost with the data: a fresh one starts
  CHECK(after.tier == swl::Tier::redis);
  CHECK(after.remaining == 2);
  auto admin = server.connect();
  CHECK(commandCalls(admin, "script|load") == 1);  // NOSCRIPT, one load, the call repeated
  CHECK(logEntries(admin, "swl:k") == 1);
}

TEST_CASE("Redis out of memory: a clear error through the failure policy, never an admit it did not record") {
  RedisServer server({"--maxmemory-policy", "noeviction"});
  auto admin = server.connect();
  auto connection = server.connect(failFast(250ms));
  swl::SlidingWindowLimiter<> strict(connection, swl::Limit{100, 1h});
  REQUIRE(strict.tryAcquire("before").allowed);  // loads the script while there is room

  // 2 MB of data, then a 1 MB cap: the server stays above it, whatever its buffers do meanwhile.
  const std::string ballast(64 * 1024, 'x');
  for (int i = 0; i < 32; ++i) textReply(admin, {"SET", "ballast:" + std::to_string(i), ballast});
  textReply(admin, {"CONFIG", "SET", "maxmemory", "1mb"});
  CHECK_THROWS_WITH(strict.tryAcquire("k"), Catch::Contains("OOM") && Catch::Contains("sliding_window"));

  swl::LimiterOptions open;
  open.on_failure = swl::FailurePolicy::allow;
  swl::SlidingWindowLimiter<> opens(connection, swl::Limit{100, 1h}, open);
  CHECK(opens.tryAcquire("k").tier == swl::Tier::fail_open);
  swl::LimiterOptions closed;
  closed.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<> closes(connection, swl::Limit{100, 1h}, closed);
  const swl::Decision refused = closes.tryAcquire("k");
  CHECK_FALSE(refused.allowed);
  CHECK(refused.tier == swl::Tier::fail_closed);
  CHECK(integerReply(admin, {"EXISTS", "swl:k"}) == 0);  // nothing was recorded, so nothing was admitted by Redis

  textReply(admin, {"FLUSHALL"});  // memory freed: Redis decides again
  textReply(admin, {"CONFIG", "SET", "maxmemory", "0"});
  CHECK(closes.tryAcquire("k").tier == swl::Tier::redis);
  CHECK(logEntries(admin, "swl:k") == 1);
}

TEST_CASE("three insured instances stay within their shares during an outage and hand back to Redis") {
  RedisServer server;
  swl::TierOptions tiers;
  tiers.instances = 3;
  tiers.redis_retry_interval = 200ms;
  swl::testing::ManualClock clock;  // moves the retry interval by hand
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  std::vector<std::unique_ptr<swl::ConnectionPool>> pools;
  std::vector<std::unique_ptr<swl::TieredLimiter<>>> instances;
  for (int i = 0; i < 3; ++i) {
    pools.push_back(std::make_unique<swl::ConnectionPool>(
        [&] { return swl::Connection::tcp("127.0.0.1", server.port(), failFast(250ms)); }, swl::PoolOptions{2}));
    instances.push_back(std::make_unique<swl::TieredLimiter<>>(*pools.back(), swl::Limit{30, 1h}, options, tiers));
  }
  server.stop();
  std::atomic<int> admitted[3] = {0, 0, 0};
  std::atomic<int> not_insured{0};  // Catch's assertions are not thread-safe: count, then check
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, i] {
        for (int call = 0; call < 40; ++call) {
          const swl::Decision decision = instances[i]->tryAcquire("k");
          if (decision.allowed) admitted[i].fetch_add(1);
          if (decision.tier != swl::Tier::insurance) not_insured.fetch_add(1);
        }
      });
    }
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(not_insured.load() == 0);
  for (int i = 0; i < 3; ++i) CHECK(admitted[i].load() == 10);  // 30 / 3 each, 30 in all

  server.start();
  clock.advance(200ms);  // one retry interval: the next call of each instance asks Redis again
  int by_redis = 0;
  for (int round = 0; round < 20; ++round) {
    for (auto& instance : instances) {
      const swl::Decision decision = instance->tryAcquire("k");
      if (decision.tier == swl::Tier::redis && decision.allowed) ++by_redis;
    }
  }
  CHECK(by_redis == 30);  // Redis decides again, for all three, with the whole limit
  auto admin = server.connect();
  CHECK(logEntries(admin, "swl:k") == 30);
}
