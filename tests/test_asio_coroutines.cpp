// C++20 coroutines in the caller's code (swl itself stays C++17): use_awaitable (and, on an Asio that
// awaits deferred operations, no token at all), redirect_error for the error code, `||` against a timer
// on many threads, and coroutines left waiting when their io_context goes. Built against standalone Asio,
// and again against Boost.Asio (SWL_USE_BOOST_ASIO), which is how the sanitized builds (clang) run it.
#include <swl/asio/limiter.hpp>
#include <swl/swl.hpp>

#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#ifdef SWL_USE_BOOST_ASIO
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#else
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::RedisServer;
using namespace swl::asio::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;

#ifdef SWL_USE_BOOST_ASIO
constexpr const char* kCoroutinesCase =
    "on Boost.Asio, a coroutine awaits decisions with use_awaitable and redirect_error";
#else
constexpr const char* kCoroutinesCase =
    "a coroutine awaits decisions with use_awaitable, and redirect_error hands it the error code";
#endif

TEST_CASE(kCoroutinesCase) {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", server.port(), swl::test::patient());
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{2, 60s});
  int admitted = 0, refused = 0;
  std::chrono::microseconds retry_after{0};
  std::int64_t used = -1;
  swl::asio_error_code invalid;
  std::exception_ptr failed;

  swl::asio::co_spawn(
      io,
      [&]() -> swl::asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) {
          const swl::Decision decision = co_await limiter.async_try_acquire("user", 1, swl::asio::use_awaitable);
          (decision ? admitted : refused) += 1;
          if (!decision) retry_after = decision.retry_after;
        }
        swl::asio_error_code error;
        const swl::Usage usage =
            co_await limiter.async_peek("user", swl::asio::redirect_error(swl::asio::use_awaitable, error));
        if (!error) used = usage.used;
        try {
          co_await limiter.async_try_acquire("", 1, swl::asio::use_awaitable);
        } catch (const swl::asio_system_error& error) {
          invalid = error.code();
        }
        redis.close();
      },
      [&](std::exception_ptr error) { failed = error; });
  io.run_for(20s);

  CHECK(!failed);
  CHECK(admitted == 2);
  CHECK(refused == 1);
  CHECK(retry_after > 59s);
  CHECK(used == 2);
  CHECK(invalid == swl::AsioErrc::invalid_argument);
}

#ifdef SWL_USE_BOOST_ASIO
TEST_CASE("on Boost.Asio, a coroutine awaits an operation given no token (asio::deferred) as it would call it") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", server.port(), swl::test::patient());
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{2, 60s});
  std::vector<bool> admitted;
  std::int64_t used = -1;
  std::exception_ptr failed;
  swl::asio::co_spawn(
      io,
      [&]() -> swl::asio::awaitable<void> {
        for (int i = 0; i < 3; ++i) admitted.push_back((co_await limiter.async_try_acquire("user")).allowed);
        used = (co_await limiter.async_peek("user")).used;
        co_await limiter.async_reset("user");
        redis.close();  // the connection's work ends, and run_for returns
      },
      [&](std::exception_ptr error) { failed = error; });
  io.run_for(20s);
  CHECK(!failed);
  CHECK(admitted == std::vector<bool>{true, true, false});
  CHECK(used == 2);
}
#endif

namespace {

struct RaceTally {
  std::atomic<int> decided{0}, cancelled{0}, raced{0}, done{0};
  bool enough() const { return (cancelled >= 200 && decided >= 50) || raced >= 20000; }
};

// `co_await (decision || timer)`, over and over, on this coroutine's own strand: a timer of 0 to 2 ms, so
// that either side wins often. The loser is cancelled from the coroutine's strand while the decision
// completes on the connection's.
swl::asio::awaitable<void> race(swl::AsioSlidingWindowLimiter<>& limiter, RaceTally& tally, unsigned seed) {
  swl::asio::steady_timer timer(co_await swl::asio::this_coro::executor);
  std::minstd_rand random(seed);
  while (!tally.enough()) {
    ++tally.raced;
    timer.expires_after(std::chrono::microseconds(random() % 3 == 0 ? 0 : random() % 2000));
    const auto winner = co_await (limiter.async_try_acquire("shared", swl::asio::use_awaitable) ||
                                  timer.async_wait(swl::asio::use_awaitable));
    ++(winner.index() == 0 ? tally.decided : tally.cancelled);
  }
  ++tally.done;
}

}  // namespace

TEST_CASE(
    "8 coroutines, each on its own strand of an io_context that 4 threads run, race decisions against timers: "
    "every race ends once, and no cancellation touches a finished operation") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", server.port(), swl::test::patient());
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{1000000, 60s});
  RaceTally tally;
  std::atomic<int> failed{0};
  for (unsigned i = 0; i < 8; ++i) {
    swl::asio::co_spawn(swl::asio::make_strand(io), race(limiter, tally, i + 1),
                        [&](std::exception_ptr error) { failed += error ? 1 : 0; });
  }
  auto work = swl::asio::make_work_guard(io);
  std::vector<std::thread> running;
  for (int i = 0; i < 4; ++i) running.emplace_back([&] { io.run(); });
  const auto until = Clock::now() + 100s;
  while (tally.done + failed < 8 && Clock::now() < until) std::this_thread::sleep_for(5ms);
  work.reset();
  io.stop();
  for (std::thread& runner : running) runner.join();

  INFO("raced " << tally.raced << ": decided " << tally.decided << ", cancelled " << tally.cancelled);
  CHECK(failed == 0);
  REQUIRE(tally.done == 8);
  CHECK(tally.cancelled >= 200);
  CHECK(tally.decided >= 50);
  CHECK(tally.decided + tally.cancelled == tally.raced);
  swl::Connection blocking = server.connect();
  const std::int64_t counted = swl::SlidingWindowLimiter<>(blocking, limiter.limit()).peek("shared").used;
  CHECK(counted >= tally.decided);  // a cancelled call may have been sent, and counted
  CHECK(counted <= tally.raced);
}

TEST_CASE("coroutines awaiting a stopped Redis when their io_context is destroyed are destroyed with it, unresumed") {
  RedisServer server;
  auto token = std::make_shared<int>(0);  // each coroutine frame holds a copy
  const std::weak_ptr<int> frames = token;
  int resumed = 0;
  {
    swl::asio::io_context io;
    auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", server.port(), swl::test::patient());
    swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{100, 60s});
    server.pause();
    for (int i = 0; i < 8; ++i) {
      swl::asio::co_spawn(
          io,
          [&, token]() -> swl::asio::awaitable<void> {
            co_await limiter.async_try_acquire("key", swl::asio::use_awaitable);
            ++resumed;
          },
          swl::asio::detached);
    }
    token.reset();
    io.run_for(300ms);  // each has sent its call, and waits
  }
  CHECK(resumed == 0);
  CHECK(frames.expired());
  server.resume();
}
