#include <swl/algorithms/sliding_window.hpp>
#include <swl/redis/connection_pool.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::RedisServer;
using swl::test::textReply;

namespace {

swl::ConnectionPool poolFor(const RedisServer& server, swl::PoolOptions pool_options = {},
                            swl::ConnectionOptions options = {}) {
  return swl::ConnectionPool::tcp("127.0.0.1", server.port(), pool_options, options);
}

// CLIENT LIST counts this observer too.
long long clientsConnected(swl::Connection& observer) {
  const std::string list = textReply(observer, {"CLIENT", "LIST"});
  long long lines = 0;
  for (char c : list) lines += c == '\n';
  return lines - 1;
}

}  // namespace

TEST_CASE("a limiter on a pool of 4 shared by 8 threads x 1,000 calls admits exactly the limit") {
  RedisServer server;
  auto pool = poolFor(server, swl::PoolOptions{4, 5000ms});
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{100, 60s});

  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 8; ++thread) {
    threads.emplace_back([&] {
      for (int call = 0; call < 1000; ++call) admitted += limiter.tryAcquire("shared").allowed ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();

  CHECK(admitted == 100);
  auto observer = server.connect();
  CHECK(logEntries(observer, "swl:shared") == 100);
  CHECK(clientsConnected(observer) <= 4);
  CHECK(pool.idle() == 4);
}

TEST_CASE("a pool opens connections only as calls need them, and reuses the one returned last") {
  RedisServer server;
  auto pool = poolFor(server);
  auto observer = server.connect();
  CHECK(clientsConnected(observer) == 0);
  for (int i = 0; i < 10; ++i) pool.borrow()->ping();
  CHECK(clientsConnected(observer) == 1);
  {
    auto first = pool.borrow();
    auto second = pool.borrow();
    first->ping(), second->ping();
    CHECK(pool.idle() == 6);
  }
  CHECK(clientsConnected(observer) == 2);
  CHECK(pool.idle() == 8);
}

TEST_CASE("borrowing from a pool with every connection lent waits, then throws a TimeoutError that says so") {
  RedisServer server;
  auto pool = poolFor(server, swl::PoolOptions{1, 50ms});
  auto lease = pool.borrow();
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(pool.borrow(), swl::TimeoutError);
  CHECK(std::chrono::steady_clock::now() - started >= 50ms);
  CHECK_THROWS_WITH(pool.borrow(), Catch::Contains("all 1 connections stayed in use for 50 ms"));
}

TEST_CASE("a waiting borrower gets the connection as soon as it is returned") {
  RedisServer server;
  auto pool = poolFor(server, swl::PoolOptions{1, 5000ms});
  std::promise<void> borrowed;
  std::future<long long> client_id;
  {
    auto lease = pool.borrow();
    const long long first_id = lease->command({"CLIENT", "ID"})->integer();
    client_id = std::async(std::launch::async, [&] { return pool.borrow()->command({"CLIENT", "ID"})->integer(); });
    CHECK(client_id.wait_for(50ms) == std::future_status::timeout);  // still lent
    CHECK(first_id > 0);
  }
  REQUIRE(client_id.wait_for(5s) == std::future_status::ready);
  CHECK(client_id.get() > 0);
}

TEST_CASE("an exhausted pool is a Redis failure to the limiter: its failure policy answers") {
  RedisServer server;
  auto pool = poolFor(server, swl::PoolOptions{1, 10ms});
  swl::LimiterOptions options;
  options.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{10, 60s}, options);
  auto lease = pool.borrow();
  const swl::Decision decision = limiter.tryAcquire("k");
  CHECK_FALSE(decision.allowed);
  CHECK(decision.tier == swl::Tier::fail_closed);
}

TEST_CASE("a pooled connection killed by the server is replaced, not used again") {
  RedisServer server;
  auto pool = poolFor(server, swl::PoolOptions{2, 1000ms});
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{100, 60s});
  long long ids_before[2];
  {
    auto first = pool.borrow(), second = pool.borrow();
    ids_before[0] = first->command({"CLIENT", "ID"})->integer();
    ids_before[1] = second->command({"CLIENT", "ID"})->integer();
  }
  auto observer = server.connect();
  CHECK(integerReply(observer, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) == 2);
  swl::test::idlePastCheck();

  for (int i = 0; i < 5; ++i) CHECK(limiter.tryAcquire("k").tier == swl::Tier::redis);
  auto first = pool.borrow(), second = pool.borrow();
  for (auto* lease : {&first, &second}) {
    const long long id = (*lease)->command({"CLIENT", "ID"})->integer();
    CHECK(id != ids_before[0]);
    CHECK(id != ids_before[1]);
  }
}

TEST_CASE("a pooled connection that timed out is dropped and the next call works on a new one") {
  RedisServer server;
  swl::ConnectionOptions options = swl::test::failFast(100ms);  // no breaker: this is about the connection
  auto pool = poolFor(server, swl::PoolOptions{1, 1000ms}, options);
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{100, 60s});
  CHECK(limiter.tryAcquire("k").allowed);
  server.pause();
  CHECK_THROWS_AS(limiter.tryAcquire("k"), swl::TimeoutError);
  CHECK_FALSE(pool.borrow()->isConnected());
  server.resume();
  CHECK(limiter.tryAcquire("k").allowed);
  auto observer = server.connect();
  // The timed-out call may or may not have been counted; nothing was sent twice.
  const long long recorded = logEntries(observer, "swl:k");
  CHECK(recorded >= 2);
  CHECK(recorded <= 3);
}

TEST_CASE("a pool of size 0 or with a negative borrow timeout is refused") {
  CHECK_THROWS_WITH(swl::ConnectionPool::tcp("127.0.0.1", 1, swl::PoolOptions{0}), Catch::Contains("size is 0"));
  CHECK_THROWS_AS(swl::ConnectionPool::tcp("127.0.0.1", 1, swl::PoolOptions{1, -1ms}), swl::InvalidArgument);
  CHECK_THROWS_AS(swl::ConnectionPool::tcp("127.0.0.1", 0), swl::InvalidArgument);
}
