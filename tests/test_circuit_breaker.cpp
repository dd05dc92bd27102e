// The circuit breaker every connection to one server shares (detail/io/circuit_breaker.hpp): its states on
// a clock moved by hand, then end to end with a frozen redis-server, on one connection and on a pool.

#include <swl/swl.hpp>

#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::RedisServer;
using Breaker = swl::detail::CircuitBreaker;
using Cause = swl::detail::BreakCause;

TEST_CASE("the limiter's defaults hold no request hostage: 200 ms to connect, 50 ms to answer, 250 ms of cool-down") {
  const swl::ConnectionOptions defaults;
  CHECK(defaults.connect_timeout == 200ms);
  CHECK(defaults.command_timeout == 50ms);
  CHECK(defaults.breaker_cooldown == 250ms);
}

TEST_CASE("a breaker opens on a failure, refuses for the cool-down, lets one probe through, and closes on an answer") {
  Breaker breaker(250ms, 1000ms);
  const auto start = Breaker::Clock::now();
  breaker.admit("r:1", start);  // closed: everyone may go
  CHECK_FALSE(breaker.isOpen());

  breaker.recordFailure("redis at r:1 timed out", Cause::unreachable, start);
  CHECK(breaker.isOpen());
  CHECK_THROWS_AS(breaker.admit("r:1", start + 249ms), swl::CircuitOpenError);
  CHECK_THROWS_WITH(breaker.admit("r:1", start + 100ms),
                    Catch::Contains("redis at r:1 is not asked for another 150 ms") && Catch::Contains("timed out"));
  CHECK_THROWS_AS(breaker.refuseWhileOpen("r:1", start + 249ms), swl::CircuitOpenError);
  CHECK_NOTHROW(breaker.refuseWhileOpen("r:1", start + 250ms));  // cooled down; asking does not take the probe

  breaker.admit("r:1", start + 250ms);                                                       // the probe
  CHECK_THROWS_AS(breaker.admit("r:1", start + 251ms), swl::CircuitOpenError);               // one probe at a time
  breaker.recordFailure("redis at r:1 timed out again", Cause::unreachable, start + 300ms);  // the probe failed
  CHECK_THROWS_AS(breaker.admit("r:1", start + 549ms), swl::CircuitOpenError);
  breaker.admit("r:1", start + 550ms);
  breaker.recordSuccess();
  CHECK_FALSE(breaker.isOpen());
  breaker.admit("r:1", start + 551ms);
  breaker.admit("r:1", start + 551ms);
}

TEST_CASE("a probe that never reports holds the circuit half open only for its patience") {
  Breaker breaker(100ms, 500ms);
  const auto start = Breaker::Clock::now();
  breaker.recordFailure("refused", Cause::unreachable, start);
  breaker.admit("r:1", start + 100ms);  // a probe whose thread never comes back
  CHECK_THROWS_AS(breaker.admit("r:1", start + 599ms), swl::CircuitOpenError);
  CHECK_NOTHROW(breaker.admit("r:1", start + 600ms));  // another probe may go
}

TEST_CASE("a circuit opened by a refused password or TLS handshake refuses with that error's type, saying it is open") {
  Breaker breaker(250ms, 1000ms);
  const auto start = Breaker::Clock::now();
  breaker.recordFailure("redis at r:1 requires a password", Cause::refused_credentials, start);
  CHECK_THROWS_AS(breaker.admit("r:1", start + 100ms), swl::AuthError);
  CHECK_THROWS_WITH(
      breaker.admit("r:1", start + 100ms),
      Catch::Contains("not asked for another 150 ms: its circuit is open") && Catch::Contains("requires a password"));
  CHECK_THROWS_AS(breaker.refuseWhileOpen("r:1", start + 100ms), swl::AuthError);

  breaker.admit("r:1", start + 250ms);  // the probe, which fails its TLS handshake
  breaker.recordFailure("redis at r:1 failed the TLS handshake", Cause::failed_tls, start + 260ms);
  CHECK_THROWS_AS(breaker.admit("r:1", start + 300ms), swl::TlsError);
  breaker.admit("r:1", start + 510ms);  // the probe, which times out: a circuit opened by it is CircuitOpenError
  breaker.recordFailure("redis at r:1 timed out", Cause::unreachable, start + 520ms);
  try {
    breaker.admit("r:1", start + 600ms);
    FAIL("an open circuit admitted a call");
  } catch (const swl::CircuitOpenError&) {
  }
}

TEST_CASE("a breaker with no cool-down never opens") {
  Breaker breaker(0ms, 0ms);
  breaker.recordFailure("refused");
  CHECK_FALSE(breaker.isOpen());
  CHECK_NOTHROW(breaker.admit("r:1"));
}

TEST_CASE("a frozen Redis costs one call its timeout, then every call fails at once until a probe finds it back") {
  RedisServer server;
  swl::ConnectionOptions options;
  options.command_timeout = 100ms;
  options.breaker_cooldown = 300ms;
  auto connection = server.connect(options);
  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{1000, 60s}, fail_open);
  REQUIRE(limiter.tryAcquire("k").tier == swl::Tier::redis);

  server.pause();
  auto started = std::chrono::steady_clock::now();
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::fail_open);  // this one waits for the timeout
  CHECK(std::chrono::steady_clock::now() - started >= 100ms);
  std::vector<std::chrono::nanoseconds> took;
  for (int i = 0; i < 1000; ++i) {
    started = std::chrono::steady_clock::now();
    CHECK(limiter.tryAcquire("k").tier == swl::Tier::fail_open);
    took.push_back(std::chrono::steady_clock::now() - started);
  }
  // Answered by the policy, without a dial or a wait: a call that waited would take the whole timeout.
  // (A loaded machine may stop any one call for milliseconds, so only the median is held to that.)
  std::sort(took.begin(), took.end());
  CHECK(took[took.size() / 2] < 5ms);
  CHECK(took.back() < options.command_timeout);
  server.resume();

  // The cool-down passes: a call probes, finds Redis, closes the circuit. A resumed server may take a
  // moment to answer on a loaded machine, so the test waits for a probe that succeeds, not one sleep.
  std::this_thread::sleep_for(300ms);
  const auto patience = std::chrono::steady_clock::now() + 5s;
  while (limiter.tryAcquire("k").tier != swl::Tier::redis && std::chrono::steady_clock::now() < patience) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::redis);
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::redis);
}

TEST_CASE("one pooled connection's timeout opens the circuit for all of them, so only the calls in flight wait") {
  RedisServer server;
  swl::ConnectionOptions options;
  options.command_timeout = 100ms;
  options.breaker_cooldown = 1000ms;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), swl::PoolOptions{4, 1000ms}, options);
  swl::LimiterOptions fail_closed;
  fail_closed.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{1000, 60s}, fail_closed);
  REQUIRE(limiter.tryAcquire("k").tier == swl::Tier::redis);

  server.pause();
  std::atomic<int> slow_calls{0}, calls{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 8; ++thread) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        const auto started = std::chrono::steady_clock::now();
        limiter.tryAcquire("k");
        if (std::chrono::steady_clock::now() - started >= 50ms) ++slow_calls;
        ++calls;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  server.resume();
  CHECK(calls == 400);
  CHECK(slow_calls <= 8);  // the first calls of each thread at most; the rest met the open circuit
}
