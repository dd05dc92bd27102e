// C++20 coroutines in the caller's code (swl itself stays C++17): use_awaitable, and redirect_error for
// the error code. Built against standalone Asio, and again against Boost.Asio (SWL_USE_BOOST_ASIO).
#include <swl/asio/limiter.hpp>
#include <swl/swl.hpp>

#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#ifdef SWL_USE_BOOST_ASIO
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#else
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#endif

#include <chrono>
#include <exception>
#include <string>

using namespace std::chrono_literals;
using swl::test::RedisServer;

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
  bool invalid_thrown = false;
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
        } catch (const swl::InvalidArgument&) {
          invalid_thrown = true;
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
  CHECK(invalid_thrown);
}
