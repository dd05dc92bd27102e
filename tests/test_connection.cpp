#include <swl/detail/holds_error.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using namespace std::chrono_literals;
using swl::test::failFast;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::RedisServer;
using swl::test::textReply;

TEST_CASE("a command swl formats is byte for byte what hiredis would write, for any arguments") {
  std::mt19937 random(38);
  const std::string alphabet("ab\r\n\0$*9", 9);  // the bytes RESP gives a meaning, a NUL and a digit
  const auto word = [&](std::size_t length) {
    std::string text;
    for (std::size_t i = 0; i < length; ++i) text += alphabet[random() % alphabet.size()];
    return text;
  };
  const auto hiredisFormat = [](const std::vector<std::string>& words) {
    std::vector<const char*> pointers;
    std::vector<std::size_t> lengths;
    for (const std::string& text : words) pointers.push_back(text.data()), lengths.push_back(text.size());
    char* command = nullptr;
    const auto length =
        redisFormatCommandArgv(&command, static_cast<int>(words.size()), pointers.data(), lengths.data());
    std::string text(command, static_cast<std::size_t>(length));
    redisFreeCommand(command);
    return text;
  };
  std::vector<std::vector<std::string>> commands = {{}, {""}, {word(100'000)}};
  for (int i = 0; i < 500; ++i) {
    std::vector<std::string> words(random() % 24);  // past 9 and 16 arguments: two-digit counts
    for (std::string& text : words) text = word(random() % 3 == 0 ? random() % 2'000 : random() % 12);
    commands.push_back(words);
  }
  // The boundaries the lengths' digits cross: each must have been reached.
  int two_digit_counts = 0, empty_words = 0, four_digit_lengths = 0;
  for (const auto& words : commands) {
    const std::vector<std::string_view> views(words.begin(), words.end());
    CHECK(swl::detail::formattedCommand(views.data(), views.size()) == hiredisFormat(words));
    two_digit_counts += words.size() >= 10 ? 1 : 0;
    for (const std::string& text : words) {
      empty_words += text.empty() ? 1 : 0;
      four_digit_lengths += text.size() >= 1'000 ? 1 : 0;
    }
  }
  std::printf("formatted commands: %d with 10 words or more, %d empty words, %d words of 1,000 bytes or more\n",
              two_digit_counts, empty_words, four_digit_lengths);
  CHECK(two_digit_counts > 0);
  CHECK(empty_words > 0);
  CHECK(four_digit_lengths > 0);
}

TEST_CASE("a connection is opened lazily and reports a refused connect as a ConnectionError naming the server") {
  RedisServer server;
  const int port = server.port();
  server.stop();
  auto connection = swl::Connection::tcp("127.0.0.1", port);  // nothing is dialled yet
  CHECK_FALSE(connection.isConnected());
  try {
    connection.ping();
    FAIL("ping succeeded without a server");
  } catch (const swl::TimeoutError&) {
    FAIL("a refused connect is not a timeout");
  } catch (const swl::ConnectionError& error) {
    CHECK_THAT(error.what(), Catch::Contains("127.0.0.1:" + std::to_string(port)));
  }
}

TEST_CASE("after a failed connect, commands fail fast until the breaker's cool-down has passed") {
  RedisServer server;
  server.stop();
  swl::ConnectionOptions options;
  options.breaker_cooldown = 3600s;
  auto connection = server.connect(options);
  CHECK_THROWS_WITH(connection.ping(), Catch::Contains("failed connecting"));
  server.start();
  CHECK_THROWS_AS(connection.ping(), swl::CircuitOpenError);
  CHECK_THROWS_WITH(connection.ping(),
                    Catch::Contains("is not asked for another") && Catch::Contains("failed connecting"));

  auto eager = server.connect(failFast());
  CHECK_NOTHROW(eager.ping());
}

TEST_CASE(
    "a server-side disconnect of an idle connection is noticed before the next command, which goes out on a new "
    "connection") {
  RedisServer server;
  auto connection = server.connect(failFast());
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s});
  CHECK(limiter.tryAcquire("k").remaining == 9);

  auto admin = server.connect();
  CHECK(integerReply(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
  swl::test::idlePastCheck();
  swl::Decision after_kill = limiter.tryAcquire("k");
  CHECK(after_kill.tier == swl::Tier::redis);
  CHECK(after_kill.remaining == 8);
  CHECK(logEntries(admin, "swl:k") == 2);  // nothing counted twice
}

TEST_CASE(
    "a busy connection sends without asking first: one the server closed since its last answer fails the next "
    "call, which it never sends again, and the call after connects afresh") {
  RedisServer server;
  swl::ConnectionOptions busy = failFast();
  busy.idle_check_after = 1h;  // however slowly this machine runs the test, the connection counts as busy
  auto connection = server.connect(busy);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s});
  CHECK(limiter.tryAcquire("k").remaining == 9);

  auto admin = server.connect();
  CHECK(integerReply(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
  CHECK_THROWS_AS(limiter.tryAcquire("k"), swl::ConnectionError);
  CHECK_FALSE(connection.isConnected());
  const swl::Decision after = limiter.tryAcquire("k");
  CHECK(after.tier == swl::Tier::redis);
  CHECK(after.remaining == 8);
  CHECK(logEntries(admin, "swl:k") == 2);  // the failed call reached no one
}

TEST_CASE("idle_check_after 0 asks before every command: a connection killed just after a call is replaced first") {
  RedisServer server;
  swl::ConnectionOptions always = failFast();
  always.idle_check_after = 0ms;
  auto connection = server.connect(always);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s});
  auto admin = server.connect();
  for (int i = 0; i < 3; ++i) {
    CHECK(limiter.tryAcquire("k").tier == swl::Tier::redis);
    CHECK(integerReply(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
  }
  CHECK(limiter.tryAcquire("k").remaining == 6);
  CHECK(logEntries(admin, "swl:k") == 4);
}

TEST_CASE("a frozen server makes a command fail with a TimeoutError, and the connection recovers after") {
  RedisServer server;
  swl::ConnectionOptions options = failFast();
  options.command_timeout = 100ms;
  auto connection = server.connect(options);
  connection.ping();
  server.pause();
  CHECK_THROWS_AS(connection.ping(), swl::TimeoutError);
  CHECK_FALSE(connection.isConnected());
  server.resume();
  CHECK_NOTHROW(connection.ping());
}

TEST_CASE("a connect that cannot complete fails with a TimeoutError after connect_timeout") {
  // A frozen server with a full accept queue leaves new connects unanswered, as a black-holed host would.
  RedisServer server({"--tcp-backlog", "1"});
  server.pause();
  std::vector<swl::detail::ContextPtr> queue_fillers;
  for (int i = 0; i < 4; ++i) {
    queue_fillers.emplace_back(redisConnectWithTimeout("127.0.0.1", server.port(), timeval{0, 100'000}));
  }
  swl::ConnectionOptions options;
  options.connect_timeout = 100ms;
  auto connection = server.connect(options);
  CHECK_THROWS_AS(connection.ping(), swl::TimeoutError);
  CHECK_THROWS_WITH(connection.ping(), Catch::Contains("not retrying") || Catch::Contains("timed out connecting"));
  server.resume();
}

TEST_CASE("AUTH with a password: missing, wrong and right") {
  RedisServer server({"--requirepass", "s3cret-pass"});

  // Without a password: an AuthError that says the server wants one, for a PING and for a script call
  // alike (Redis would close the connection on a long unauthenticated command with a protocol error).
  auto anonymous = server.connect();
  CHECK_THROWS_AS(anonymous.ping(), swl::AuthError);
  CHECK_THROWS_WITH(anonymous.ping(), Catch::Contains("requires a password") && Catch::Contains("NOAUTH"));
  swl::SlidingWindowLimiter<> unauthenticated(anonymous, swl::Limit{5, 1s});
  for (int i = 0; i < 5; ++i) CHECK_THROWS_AS(unauthenticated.tryAcquire("k"), swl::AuthError);

  swl::ConnectionOptions wrong;
  wrong.password = "not-the-password";
  auto refused = server.connect(wrong);
  try {
    refused.ping();
    FAIL("a wrong password was accepted");
  } catch (const swl::AuthError& error) {
    CHECK_THAT(error.what(), Catch::Contains("refused authentication"));
    CHECK_THAT(error.what(), !Catch::Contains("not-the-password"));
  }

  swl::ConnectionOptions right;
  right.password = "s3cret-pass";
  auto connection = server.connect(right);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 1s});
  CHECK(limiter.tryAcquire("k").allowed);
}

TEST_CASE("a circuit opened by a refused password stays an AuthError, for a connection and a limiter alike") {
  RedisServer server({"--requirepass", "s3cret-pass"});
  swl::ConnectionOptions options = swl::test::patient();
  options.breaker_cooldown = 60s;  // open for the whole test
  auto anonymous = server.connect(options);
  CHECK_THROWS_AS(anonymous.ping(), swl::AuthError);  // opens the circuit
  try {
    anonymous.ping();
    FAIL("an open circuit let a call through");
  } catch (const swl::AuthError& error) {
    CHECK_THAT(error.what(), Catch::Contains("its circuit is open") && Catch::Contains("requires a password"));
  }
  swl::SlidingWindowLimiter<> limiter(anonymous, swl::Limit{5, 1s});
  CHECK_THROWS_AS(limiter.tryAcquire("k"), swl::AuthError);
}

TEST_CASE("a batch may take longer in all than command_timeout while Redis keeps answering") {
  RedisServer server;
  swl::ConnectionOptions options = swl::test::patient();
  options.command_timeout = 500ms;  // each wait for a reply or for the socket to take more; the batch takes several
  auto connection = server.connect(options);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10'000'000, 600s});
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back("k" + std::to_string(i));
  // On a loaded machine one wait may still pass command_timeout (a write once waited longer while other
  // processes held both cores): such a batch is tried again, a few times in all. A client that timed the
  // whole batch would time out on every try of a batch that takes longer than four waits.
  int stalls = 0;
  for (std::size_t size = 10'000;;) {
    std::vector<swl::AcquireRequest> requests;
    for (std::size_t i = 0; i < size; ++i) requests.push_back({keys[i % keys.size()]});
    const auto started = std::chrono::steady_clock::now();
    const std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany(requests);
    const auto took = std::chrono::steady_clock::now() - started;
    const bool stalled = std::any_of(outcomes.begin(), outcomes.end(), [](const swl::Outcome& outcome) {
      return outcome.error && swl::detail::holdsError<swl::TimeoutError>(outcome.error);
    });
    if (stalled && ++stalls <= 3) continue;
    std::size_t admitted = 0;
    for (const swl::Outcome& outcome : outcomes) admitted += outcome.value().allowed ? 1 : 0;  // none timed out
    CHECK(admitted == size);
    if (took > 4 * options.command_timeout || size >= 640'000) {
      CHECK(took > 4 * options.command_timeout);
      break;
    }
    size *= 2;
  }
}

TEST_CASE("an ACL user allowed only the script's commands on the limiter's prefix can run every limiter") {
  RedisServer server;
  auto admin = server.connect();
  // The rule docs/threads-and-async.md documents, word for word.
  const std::string rule =
      "ACL SETUSER limiter on >limiter-pass resetkeys ~swl:* resetchannels -@all +evalsha +script|load +time "
      "+zcount +zscore +zrank +zrange +zrangebyscore +zrevrangebyscore +zadd +zrem +zremrangebyscore "
      "+zremrangebyrank +zcard +pexpire +hmget +hset +hdel +hkeys +get +set +del +unlink";
  std::vector<std::string> words;
  std::istringstream split(rule);
  for (std::string word; split >> word;) words.push_back(word);
  const std::vector<std::string_view> argv(words.begin(), words.end());
  CHECK(admin.command(argv.data(), argv.size())->text() == "OK");

  swl::ConnectionOptions options;
  options.user = "limiter";
  options.password = "limiter-pass";
  auto connection = server.connect(options);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{2, 1s});
  CHECK(limiter.tryAcquire("k").allowed);
  CHECK(limiter.tryAcquire("k", 1).remaining == 0);
  CHECK_FALSE(limiter.tryAcquire("k").allowed);
  CHECK(limiter.peek("k").used == 2);
  CHECK(limiter.reset("k"));
  const swl::Reservation reservation = limiter.reserve("k", 2);
  CHECK(reservation);
  CHECK(limiter.settle(reservation.receipt, 1));
  swl::SlidingCounterLimiter<> counter(connection, swl::Limit{2, 1s}, {}, swl::PrefixKey("swl:counter"));
  swl::FixedWindowLimiter<> fixed(connection, swl::Limit{2, 1s}, {}, swl::PrefixKey("swl:fixed"));
  swl::GcraLimiter<> gcra(connection, swl::Limit{2, 1s}, {}, swl::PrefixKey("swl:gcra"));
  swl::MultiLimiter<> multi(connection, {{"second", {2, 1s}}, {"minute", {5, 60s}}});
  CHECK(counter.tryAcquire("k").allowed);
  CHECK(fixed.tryAcquire("k").allowed);
  CHECK(gcra.tryAcquire("k").allowed);
  swl::BucketedWindowLimiter<> bucketed(connection, swl::Limit{2, 1s}, {}, swl::PrefixKey("swl:bucketed"));
  CHECK(bucketed.tryAcquire("k", 2).allowed);
  CHECK_FALSE(bucketed.tryAcquire("k").allowed);
  CHECK(limiter.tryAcquire("weighted", 2).allowed);
  CHECK(multi.tryAcquire({"k", "k"}).decision.allowed);
  CHECK(integerReply(admin, {"EXISTS", "swl:counter:k", "swl:fixed:k", "swl:gcra:k", "swl:bucketed:k"}) == 4);
  // A weighted log whose whole window slid out goes with UNLINK.
  swl::testing::ManualClock clock;
  swl::LimiterOptions manual;
  manual.clock = swl::Clock::manual(clock);
  swl::SlidingWindowLimiter<> quiet(connection, swl::Limit{100, 1s}, manual, swl::PrefixKey("swl:quiet"));
  for (int i = 0; i < 20; ++i) REQUIRE(quiet.tryAcquire("k", 2).allowed);
  clock.advance(2s);
  CHECK(quiet.tryAcquire("k", 2).remaining == 98);
  CHECK(integerReply(admin, {"ZCARD", "swl:quiet:k"}) == 2);  // the new entry and its bookkeeping

  swl::SlidingWindowLimiter<> elsewhere(connection, swl::Limit{2, 1s}, {}, swl::PrefixKey("other"));
  CHECK_THROWS_WITH(elsewhere.tryAcquire("k"), Catch::Contains("NOPERM"));  // outside the prefix
  CHECK_THROWS_WITH(textReply(connection, {"ZPOPMIN", "swl:k"}), Catch::Contains("NOPERM"));
  CHECK_THROWS_WITH(textReply(connection, {"FLUSHALL"}), Catch::Contains("NOPERM"));

  options.password = "wrong-pass";
  auto refused = server.connect(options);
  try {
    refused.ping();
    FAIL("a wrong password was accepted");
  } catch (const swl::AuthError& error) {
    CHECK_THAT(error.what(), Catch::Contains("as user 'limiter'") && !Catch::Contains("wrong-pass"));
  }
}

TEST_CASE("SELECT puts the limiter's keys in the chosen database, after every reconnect too") {
  RedisServer server;
  swl::ConnectionOptions options = failFast();
  options.db = 3;
  auto connection = server.connect(options);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 60s});
  limiter.tryAcquire("k");
  auto admin = server.connect();
  CHECK(integerReply(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 1);
  swl::test::idlePastCheck();
  limiter.tryAcquire("k");
  CHECK(integerReply(admin, {"DBSIZE"}) == 0);
  textReply(admin, {"SELECT", "3"});
  CHECK(logEntries(admin, "swl:k") == 2);
}

TEST_CASE("a Unix socket connection works like TCP") {
  const std::string path = "/tmp/swl-test-" + std::to_string(::getpid()) + ".sock";
  RedisServer server({"--unixsocket", path, "--unixsocketperm", "700"});
  auto connection = swl::Connection::unixSocket(path);
  CHECK(connection.endpoint() == "unix:" + path);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{1, 60s});
  CHECK(limiter.tryAcquire("k").allowed);
  CHECK_FALSE(limiter.tryAcquire("k").allowed);
}

TEST_CASE("an adopted context is used and owned, and once it breaks it is not remade") {
  RedisServer server;
  redisContext* users_context = redisConnect("127.0.0.1", server.port());
  REQUIRE(users_context != nullptr);
  REQUIRE(users_context->err == 0);
  auto connection = swl::Connection::adopt(users_context);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 60s});
  CHECK(limiter.tryAcquire("k").remaining == 4);

  auto admin = server.connect();
  integerReply(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  swl::test::idlePastCheck();
  CHECK_THROWS_WITH(limiter.tryAcquire("k"), Catch::Contains("cannot remake"));
}

TEST_CASE("an adopted context factory is called again for every reconnect") {
  RedisServer server;
  int contexts_made = 0;
  auto connection = swl::Connection::adopt(
      [&] {
        ++contexts_made;
        return redisConnect("127.0.0.1", server.port());
      },
      "my tls redis", failFast());
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 60s});
  CHECK(limiter.tryAcquire("k").remaining == 4);
  auto admin = server.connect();
  integerReply(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  swl::test::idlePastCheck(failFast());
  CHECK(limiter.tryAcquire("k").remaining == 3);
  CHECK(contexts_made == 2);
  CHECK(connection.endpoint() == "my tls redis");
}

TEST_CASE("bad connection settings are refused with a named reason") {
  CHECK_THROWS_WITH(swl::Connection::tcp("", 6379), Catch::Contains("host is empty"));
  CHECK_THROWS_WITH(swl::Connection::tcp("127.0.0.1", 0), Catch::Contains("port 0"));
  CHECK_THROWS_AS(swl::Connection::tcp("127.0.0.1", 70000), swl::InvalidArgument);
  CHECK_THROWS_AS(swl::Connection::unixSocket(""), swl::InvalidArgument);
  CHECK_THROWS_AS(swl::Connection::adopt(static_cast<redisContext*>(nullptr)), swl::InvalidArgument);
  swl::ConnectionOptions negative;
  negative.command_timeout = -1ms;
  CHECK_THROWS_AS(swl::Connection::tcp("127.0.0.1", 6379, negative), swl::InvalidArgument);
  swl::ConnectionOptions never_idle;
  never_idle.idle_check_after = -1ms;
  CHECK_THROWS_WITH(swl::Connection::tcp("127.0.0.1", 6379, never_idle), Catch::Contains("idle_check_after"));
  swl::ConnectionOptions user_only;
  user_only.user = "limiter";
  CHECK_THROWS_WITH(swl::Connection::tcp("127.0.0.1", 6379, user_only), Catch::Contains("without a password"));
  swl::ConnectionOptions bad_db;
  bad_db.db = -1;
  CHECK_THROWS_AS(swl::Connection::tcp("127.0.0.1", 6379, bad_db), swl::InvalidArgument);
}

TEST_CASE("a moved-from connection's successor keeps working") {
  RedisServer server;
  auto first = server.connect();
  first.ping();
  swl::Connection second = std::move(first);
  swl::SlidingWindowLimiter<> limiter(second, swl::Limit{5, 60s});
  CHECK(limiter.tryAcquire("k").allowed);
}

TEST_CASE("TLS asked of a build without swl::tls is an InvalidArgument that says what to link, for every client") {
  // This test links swl::swl only, so TLS is not compiled in, whatever hiredis it is built against.
  swl::ConnectionOptions options;
  options.tls.enabled = true;
  CHECK_THROWS_WITH(swl::Connection::tcp("127.0.0.1", 6380, options),
                    Catch::Contains("swl::tls") && Catch::Contains("hiredis_ssl"));
  CHECK_THROWS_AS(swl::ConnectionPool::tcp("127.0.0.1", 6380, swl::PoolOptions{2}, options), swl::InvalidArgument);
  options.tls.enabled = false;
  options.tls.cert_file = "client.crt";  // without its key
  CHECK_THROWS_WITH(swl::Connection::tcp("127.0.0.1", 6380, options), Catch::Contains("key_file"));
}
