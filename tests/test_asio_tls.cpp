// The Asio limiter over TLS (hiredis 1.x with hiredis_ssl): real redis-servers with --tls-port and
// certificates made by openssl for this run, as in test_tls.cpp.
#include <swl/asio/limiter.hpp>
#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/tls_redis.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace std::chrono_literals;
using swl::test::TestCertificates;
using swl::test::TlsRedisServer;

namespace {

// Turns the io_context until `done()` or the deadline; false on the deadline.
template <class Done>
bool runUntil(swl::asio::io_context& io, Done done, std::chrono::milliseconds deadline = 20s) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    io.restart();
    io.run_one_for(10ms);
  }
  return true;
}

}  // namespace

TEST_CASE("an Asio connection over TLS admits exactly the limit, with 50 calls in flight") {
  TlsRedisServer server;
  swl::asio::io_context io;
  auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", server.tlsPort(),
                                        TestCertificates::get().clientOptions());
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{20, 60s});
  int answered = 0, allowed = 0, failed = 0;
  for (int i = 0; i < 50; ++i) {
    limiter.async_try_acquire("asio", 1, [&](swl::asio_error_code error, swl::Decision decision) {
      ++answered;
      if (error) return void(++failed);
      allowed += decision.allowed ? 1 : 0;
    });
  }
  REQUIRE(runUntil(io, [&] { return answered == 50; }));
  CHECK(failed == 0);
  CHECK(allowed == 20);
}

TEST_CASE("an Asio connection to a server whose certificate is refused fails its calls, never hangs") {
  TlsRedisServer server("elsewhere");
  swl::asio::io_context io;
  auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", server.tlsPort(),
                                        TestCertificates::get().clientOptions(swl::test::failFast(500ms)));
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{20, 60s});
  bool answered = false;
  swl::asio_error_code failure;
  limiter.async_try_acquire("asio", 1, [&](swl::asio_error_code error, swl::Decision) {
    answered = true;
    failure = error;
  });
  REQUIRE(runUntil(
      io, [&] { return answered; }, 5s));
  CHECK(failure);  // throw_error, the default: the failure is the code (TLS, or the connection it broke)
}
