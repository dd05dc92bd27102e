// TLS to real redis-servers started with --tls-port and certificates made by openssl for this run: every
// kind of client admits exactly over TLS, a connection the server closed is replaced before the next
// call, a frozen server is a timeout, and a certificate the client cannot trust is a TlsError that names
// the server and why. Built only with swl::tls (hiredis >= 1.0 with hiredis_ssl).

#include <swl/async/limiter.hpp>
#include <swl/swl.hpp>

#include "support/redis_cluster.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"
#include "support/tls_redis.hpp"

#include <catch2/catch.hpp>

#include <event2/event.h>
#include <hiredis/hiredis_ssl.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::failFast;
using swl::test::logEntries;
using swl::test::patient;
using swl::test::TestCertificates;
using swl::test::TlsRedisServer;

namespace {

const TestCertificates& certificates() { return TestCertificates::get(); }

struct SslContextDeleter {
  void operator()(redisSSLContext* context) const noexcept { redisFreeSSLContext(context); }
};
using SslContext = std::unique_ptr<redisSSLContext, SslContextDeleter>;

struct LoopDeleter {
  void operator()(event_base* loop) const noexcept { event_base_free(loop); }
};
using Loop = std::unique_ptr<event_base, LoopDeleter>;

// Admissions of `calls` requests for one key under a limit of `limit`.
template <class Client>
int admitted(Client& client, const std::string& key, int calls, int limit = 5) {
  swl::SlidingWindowLimiter<> limiter(client, swl::Limit{limit, 60s});
  int allowed = 0;
  for (int i = 0; i < calls; ++i) allowed += limiter.tryAcquire(key).allowed;
  return allowed;
}

// The message of the ConnectionError a ping over `options` to `server` gives; fails the test if none.
template <class Expected>
std::string refusal(const TlsRedisServer& server, const swl::ConnectionOptions& options) {
  auto connection = swl::Connection::to(server.address(), options);
  try {
    connection.ping();
  } catch (const Expected& error) {
    return error.what();
  }
  FAIL("the ping over TLS succeeded");
  return {};
}

}  // namespace

TEST_CASE("a connection over TLS admits exactly the limit, and the plain port sees its entries") {
  TlsRedisServer server;
  auto connection = swl::Connection::to(server.address(), certificates().clientOptions());
  CHECK(admitted(connection, "tls", 8) == 5);
  auto plain = server.plain();
  CHECK(logEntries(plain, "swl:tls") == 5);
}

TEST_CASE("a pool's connections over TLS share one TLS context and admit exactly from eight threads") {
  TlsRedisServer server;
  auto pool = swl::ConnectionPool([&] { return swl::Connection::to(server.address(), certificates().clientOptions()); },
                                  swl::PoolOptions{4});
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{100, 60s});
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) allowed += limiter.tryAcquire("pooled").allowed;
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(allowed.load() == 100);
  // Equal TlsOptions give the same context: the files are read once however many connections open.
  const auto options = certificates().clientOptions().tls;
  CHECK(swl::detail::tlsContextFor(options) == swl::detail::tlsContextFor(options));
}

TEST_CASE("a TLS connection the server closed (CLIENT KILL) is replaced before the next call, which succeeds") {
  TlsRedisServer server;
  auto connection = swl::Connection::to(server.address(), certificates().clientOptions());
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s});
  REQUIRE(limiter.tryAcquire("killed").allowed);
  auto plain = server.plain();
  const auto killed = plain.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  REQUIRE(killed->integer() == 1);
  swl::test::idlePastCheck();
  for (int i = 0; i < 3; ++i) CHECK(limiter.tryAcquire("killed").allowed);
  CHECK(logEntries(plain, "swl:killed") == 4);
}

TEST_CASE("a TLS context the caller made and handed to adopt is replaced too once the server closed it") {
  TlsRedisServer server;
  redisSSLContextError error = REDIS_SSL_CTX_NONE;
  const SslContext ssl(
      redisCreateSSLContext(certificates().path("ca.crt").c_str(), nullptr, nullptr, nullptr, "127.0.0.1", &error));
  REQUIRE(ssl != nullptr);
  int made = 0;
  auto connection = swl::Connection::adopt(
      [&]() -> redisContext* {
        ++made;
        redisContext* context = redisConnect("127.0.0.1", server.tlsPort());
        if (context != nullptr && context->err == 0) redisInitiateSSLWithContext(context, ssl.get());
        return context;
      },
      "the caller's TLS context", patient());
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s});
  REQUIRE(limiter.tryAcquire("adopted").allowed);
  auto plain = server.plain();
  REQUIRE(plain.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"})->integer() == 1);
  swl::test::idlePastCheck();
  for (int i = 0; i < 3; ++i) CHECK(limiter.tryAcquire("adopted").allowed);  // was: "Server closed the connection"
  CHECK(made == 2);
  CHECK(logEntries(plain, "swl:adopted") == 4);
}

TEST_CASE("a TLS connection left idle past the server's timeout is replaced before the next call") {
  TlsRedisServer server("server", {"--timeout", "1"});
  auto connection = swl::Connection::to(server.address(), certificates().clientOptions());
  connection.ping();
  std::this_thread::sleep_for(2500ms);  // Redis checks idle clients about every second
  CHECK_NOTHROW(connection.ping());
}

TEST_CASE("a frozen TLS server is a TimeoutError within the timeout, for a call and for a handshake") {
  TlsRedisServer server;
  auto options = certificates().clientOptions(failFast(300ms));
  auto connection = swl::Connection::to(server.address(), options);
  connection.ping();
  server.server().pause();
  auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(connection.ping(), swl::TimeoutError);
  CHECK(std::chrono::steady_clock::now() - started < 2s);

  // A new connection: the kernel completes TCP for a frozen server, so the handshake is what waits.
  auto fresh = swl::Connection::to(server.address(), options);
  started = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(fresh.ping(), Catch::Contains("timed out") && Catch::Contains(std::to_string(server.tlsPort())));
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  server.server().resume();
}

TEST_CASE("a certificate from a CA the client does not trust is a TlsError naming the server, not the keys") {
  TlsRedisServer server;
  auto options = certificates().clientOptions();
  options.tls.ca_file = certificates().path("other-ca.crt");
  const std::string message = refusal<swl::TlsError>(server, options);
  CHECK_THAT(message, Catch::Contains("127.0.0.1:" + std::to_string(server.tlsPort())) &&
                          Catch::Contains("certificate was refused") && !Catch::Contains("BEGIN"));
}

TEST_CASE("an expired server certificate is a TlsError that says it expired") {
  TlsRedisServer server("expired");
  CHECK_THAT(refusal<swl::TlsError>(server, certificates().clientOptions()), Catch::Contains("expired"));
}

TEST_CASE("a certificate for another name is a TlsError, and the right server_name is accepted") {
  TlsRedisServer server("elsewhere");
  CHECK_THAT(refusal<swl::TlsError>(server, certificates().clientOptions()), Catch::Contains("mismatch"));
  auto options = certificates().clientOptions();
  options.tls.server_name = "elsewhere.example";
  auto connection = swl::Connection::to(server.address(), options);
  CHECK_NOTHROW(connection.ping());
  options.tls.server_name = "localhost";  // the server's certificate does not carry it
  CHECK_THAT(refusal<swl::TlsError>(server, options), Catch::Contains("'localhost'"));
}

TEST_CASE("verify_peer false accepts a certificate no one vouches for") {
  TlsRedisServer server("elsewhere");
  auto options = certificates().clientOptions();
  options.tls.ca_file = certificates().path("other-ca.crt");
  options.tls.verify_peer = false;
  auto connection = swl::Connection::to(server.address(), options);
  CHECK_NOTHROW(connection.ping());
}

TEST_CASE("a server that requires client certificates refuses a client without one and serves one with") {
  TlsRedisServer server("server", {"--tls-auth-clients", "yes"});
  auto anonymous = swl::Connection::to(server.address(), certificates().clientOptions(failFast(1000ms)));
  CHECK_THROWS_AS(anonymous.ping(), swl::ConnectionError);

  auto options = certificates().clientOptions();
  options.tls.cert_file = certificates().path("client.crt");
  options.tls.key_file = certificates().path("client.key");
  auto connection = swl::Connection::to(server.address(), options);
  CHECK(admitted(connection, "mutual", 7) == 5);
}

TEST_CASE("TLS files that cannot be used, half a client certificate, or a unix socket are InvalidArguments") {
  auto options = certificates().clientOptions();
  options.tls.ca_file = "/nonexistent/ca.crt";
  CHECK_THROWS_WITH(swl::Connection::to({"127.0.0.1", 6380}, options),
                    Catch::Contains("ca_file") && Catch::Contains("/nonexistent/ca.crt"));

  options = certificates().clientOptions();
  options.tls.cert_file = certificates().path("client.crt");
  CHECK_THROWS_AS(swl::Connection::to({"127.0.0.1", 6380}, options), swl::InvalidArgument);
  options.tls.key_file = certificates().path("server.key");  // not this certificate's key
  CHECK_THROWS_WITH(swl::Connection::to({"127.0.0.1", 6380}, options), Catch::Contains("key_file"));

  auto over_unix = swl::Connection::to(swl::Address::unixSocket("/tmp/nowhere.sock"), certificates().clientOptions());
  CHECK_THROWS_AS(over_unix.ping(), swl::InvalidArgument);
}

TEST_CASE("an async connection over TLS admits exactly the limit") {
  TlsRedisServer server;
  Loop loop(event_base_new());
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.tlsPort(), certificates().clientOptions());
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{20, 60s});
  int answered = 0, allowed = 0, failed = 0;
  for (int i = 0; i < 50; ++i) {
    limiter.tryAcquire("async", [&](swl::Outcome outcome) {
      ++answered;
      if (!outcome.ok()) return void(++failed);
      allowed += outcome.decision.allowed;
    });
  }
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (answered < 50 && std::chrono::steady_clock::now() < until) event_base_loop(loop.get(), EVLOOP_ONCE);
  REQUIRE(answered == 50);
  CHECK(failed == 0);
  CHECK(allowed == 20);
}

TEST_CASE("an async connection to a server whose certificate is refused fails its calls, never hangs") {
  TlsRedisServer server("elsewhere");
  Loop loop(event_base_new());
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.tlsPort(),
                                         certificates().clientOptions(failFast(500ms)));
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{20, 60s});
  bool answered = false, failed = false;
  limiter.tryAcquire("async", [&](swl::Outcome outcome) { answered = true, failed = !outcome.ok(); });
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!answered && std::chrono::steady_clock::now() < until)
    event_base_loop(loop.get(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
  CHECK(answered);
  CHECK(failed);
}

TEST_CASE("a cluster client over TLS reads the TLS ports from the slot map and admits exactly on every master") {
  const TestCertificates& files = certificates();
  swl::test::RedisCluster cluster([&] {
    std::vector<std::string> arguments =
        TlsRedisServer::arguments(swl::test::RedisServer::freeLoopbackPort(), "server", {});
    for (const char* setting : {"--tls-cluster", "yes", "--tls-replication", "yes"}) arguments.push_back(setting);
    return arguments;
  });
  // A seed's TLS port, as the plain port's CLUSTER SLOTS does not tell it: ask the node's config.
  std::vector<swl::Address> seeds;
  for (const swl::Address& plain : cluster.seeds()) {
    auto connection = cluster.connect(plain.port);
    const swl::Reply reply = connection.command({"CONFIG", "GET", "tls-port"});
    seeds.push_back({"127.0.0.1", std::stoi(std::string((*reply)[1].text()))});
  }
  swl::ClusterOptions options;
  options.connection = files.clientOptions();
  swl::ClusterConnection tls_cluster(seeds, options);
  swl::SlidingWindowLimiter<> limiter(tls_cluster, swl::Limit{3, 60s});
  for (const std::string key : {"a", "b", "c", "d", "e", "f"}) {
    int allowed = 0;
    for (int i = 0; i < 5; ++i) allowed += limiter.tryAcquire(key).allowed;
    CHECK(allowed == 3);
  }
}
