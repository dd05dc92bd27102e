#include <swl/swl.hpp>

#include "support/log_layout.hpp"
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
using swl::test::commandCalls;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::ManualTime;
using swl::test::RedisServer;
using swl::test::textReply;

TEST_CASE("exactly the limit is admitted, then every request is rejected") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 60s});

  for (int i = 0; i < 5; ++i) {
    swl::Decision decision = limiter.tryAcquire("user:42");
    CHECK(decision.allowed);
    CHECK(decision.remaining == 4 - i);
    CHECK(decision.retry_after == 0us);
    CHECK(decision.limit == 5);
  }
  for (int i = 0; i < 20; ++i) {
    swl::Decision decision = limiter.tryAcquire("user:42");
    CHECK_FALSE(decision.allowed);
    CHECK(decision.remaining == 0);
    CHECK(decision.retry_after > 0us);
    CHECK(decision.retry_after <= 60s);
  }
  CHECK(logEntries(connection, "swl:user:42") == 5);
  CHECK(limiter.tryAcquire("user:43").allowed);  // another key has its own window
}

TEST_CASE_METHOD(ManualTime, "entries slide out of the window at exactly the right microsecond") {
  const auto start = clock.now();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 1s}, options);

  CHECK(limiter.tryAcquire("k").allowed);  // at start
  clock.advance(100ms);
  CHECK(limiter.tryAcquire("k").allowed);  // at start + 100 ms
  clock.advance(100ms);
  CHECK(limiter.tryAcquire("k").allowed);  // at start + 200 ms

  clock.set(start + 1s - 1us);
  swl::Decision just_before = limiter.tryAcquire("k");
  CHECK_FALSE(just_before.allowed);
  CHECK(just_before.retry_after == 1us);

  clock.set(start + 1s);
  swl::Decision on_time = limiter.tryAcquire("k");
  CHECK(on_time.allowed);
  CHECK(on_time.remaining == 0);

  clock.set(start + 1s + 100ms - 1us);
  CHECK_FALSE(limiter.tryAcquire("k").allowed);
  clock.set(start + 1s + 100ms);
  CHECK(limiter.tryAcquire("k").allowed);
}

TEST_CASE_METHOD(ManualTime, "retry_after and reset_after are exact, and waiting retry_after is enough") {
  const auto start = clock.now();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{2, 10s}, options);

  swl::Decision first = limiter.tryAcquire("k");
  CHECK(first.reset_after == 10s);
  clock.advance(3s);
  swl::Decision second = limiter.tryAcquire("k");
  CHECK(second.retry_after == 0us);
  CHECK(second.reset_after == 10s);  // the newest entry, just added, leaves last

  clock.advance(1234567us);  // start + 4.234567 s
  swl::Decision rejected = limiter.tryAcquire("k");
  CHECK_FALSE(rejected.allowed);
  CHECK(rejected.retry_after == 10s - 4234567us);  // the oldest entry leaves at start + 10 s
  CHECK(rejected.reset_after == 13s - 4234567us);  // the newest at start + 13 s

  clock.advance(rejected.retry_after);
  swl::Decision after_waiting = limiter.tryAcquire("k");
  CHECK(after_waiting.allowed);
  CHECK(clock.now() - start == 10s);
}

TEST_CASE_METHOD(ManualTime, "a sub-second retry_after is never rounded down to zero") {
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{1, 1s}, options);
  limiter.tryAcquire("k");
  clock.advance(999'999us);
  swl::Decision decision = limiter.tryAcquire("k");
  CHECK_FALSE(decision.allowed);
  CHECK(decision.retry_after == 1us);
  CHECK(std::chrono::ceil<std::chrono::seconds>(decision.retry_after) == 1s);
}

TEST_CASE_METHOD(ManualTime, "a rejected request consumes nothing, so sustained overload does not lock everyone out") {
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 1s}, options);

  // Ten windows of a client asking every 10 ms, 100 times the limit: each window still admits exactly 3.
  for (int window = 0; window < 10; ++window) {
    int admitted = 0;
    for (int tick = 0; tick < 100; ++tick) {
      admitted += limiter.tryAcquire("flooded").allowed ? 1 : 0;
      clock.advance(10ms);
    }
    CHECK(admitted == 3);
  }
  CHECK(logEntries(connection, "swl:flooded") <= 3);
}

TEST_CASE_METHOD(ManualTime, "counting rejected requests is an opt-in penalty that keeps a hammering client out") {
  options.rejected = swl::RejectedRequests::counted;
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 1s}, options);

  int admitted = 0;
  for (int tick = 0; tick < 300; ++tick) {  // three windows, one request every 10 ms
    admitted += limiter.tryAcquire("abuser").allowed ? 1 : 0;
    clock.advance(10ms);
  }
  CHECK(admitted == 3);  // only the first three: every later request refilled the window

  // Honest retry_after even with the penalty: waiting it out (without asking) gets one in.
  swl::Decision rejected = limiter.tryAcquire("abuser");
  REQUIRE_FALSE(rejected.allowed);
  clock.advance(rejected.retry_after);
  CHECK(limiter.tryAcquire("abuser").allowed);
}

TEST_CASE_METHOD(ManualTime, "the fixed-window edge burst does not happen: no window ever holds more than the limit") {
  clock.set(std::chrono::seconds(1'700'000'000));
  const auto minute = clock.now();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 1s}, options);

  // A fixed window would admit 10 in the last 10 ms of one second and 10 more in the first 10 ms of
  // the next: 20 within 20 ms.
  std::vector<std::chrono::microseconds> admitted_at;
  auto burst = [&](std::chrono::microseconds at) {
    clock.set(at);
    for (int i = 0; i < 10; ++i) {
      if (limiter.tryAcquire("edge").allowed) admitted_at.push_back(clock.now());
    }
  };
  burst(minute + 990ms);
  burst(minute + 1010ms);
  CHECK(admitted_at.size() == 10);
  // One window after the first burst: room again. A key's entries never share a microsecond, so the
  // burst's ten lie 1 us apart and have all left 9 us later.
  burst(minute + 1990ms + 9us);
  CHECK(admitted_at.size() == 20);

  // And under steady traffic too: every window of one second ending at an admission holds at most 10.
  for (int tick = 0; tick < 500; ++tick) {
    clock.advance(7ms);
    if (limiter.tryAcquire("edge").allowed) admitted_at.push_back(clock.now());
  }
  for (std::size_t newest = 0; newest < admitted_at.size(); ++newest) {
    std::size_t in_window = 0;
    for (std::size_t other = 0; other <= newest; ++other) {
      if (admitted_at[other] > admitted_at[newest] - 1s) ++in_window;
    }
    CHECK(in_window <= 10);
  }
}

TEST_CASE("8 threads x 1,000 calls on one key with a limit of 100 admit exactly 100") {
  RedisServer server;
  std::atomic<int> admitted{0};
  std::atomic<int> rejected{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 8; ++thread) {
    threads.emplace_back([&] {
      auto connection = server.connect();  // a Connection is per thread
      swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, 60s});
      for (int call = 0; call < 1000; ++call) {
        (limiter.tryAcquire("shared").allowed ? admitted : rejected)++;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(admitted == 100);
  CHECK(rejected == 7900);
  auto connection = server.connect();
  CHECK(logEntries(connection, "swl:shared") == 100);
}

TEST_CASE_METHOD(ManualTime, "a request of cost above one takes that many units, in one decision") {
  const auto start = clock.now();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 1s}, options);

  CHECK(limiter.tryAcquire("k", 4).remaining == 6);
  clock.advance(100ms);
  CHECK(limiter.tryAcquire("k", 4).remaining == 2);
  clock.advance(100ms);
  swl::Decision too_much = limiter.tryAcquire("k", 4);
  CHECK_FALSE(too_much.allowed);
  CHECK(too_much.remaining == 2);
  CHECK(too_much.retry_after == 800ms);         // two of the first request's units must leave, at start + 1 s
  CHECK(logEntries(connection, "swl:k") == 2);  // one entry per request, whatever its cost

  swl::Decision fits = limiter.tryAcquire("k", 2);
  CHECK(fits.allowed);
  CHECK(fits.remaining == 0);
  CHECK(logEntries(connection, "swl:k") == 3);

  clock.set(start + 1s);  // the first request's 4 units leave together
  CHECK(limiter.tryAcquire("k", 4).allowed);
  CHECK_FALSE(limiter.tryAcquire("k", 1).allowed);

  // A large cost is still one entry.
  swl::SlidingWindowLimiter<> big(connection, swl::Limit{5000, 1s}, options);
  CHECK(big.tryAcquire("big", 4321).remaining == 679);
  CHECK(logEntries(connection, "swl:big") == 1);
}

TEST_CASE("every key carries the expiry its TTL policy asks for") {
  RedisServer server;
  auto connection = server.connect();
  auto ttl_of = [&](const std::string& key) { return integerReply(connection, {"PTTL", key}); };

  swl::SlidingWindowLimiter<> window_ttl(connection, swl::Limit{5, 2s});
  window_ttl.tryAcquire("a");
  CHECK(ttl_of("swl:a") > 1500);
  CHECK(ttl_of("swl:a") <= 2000);

  swl::SlidingWindowLimiter<swl::PrefixKey, swl::CompactMember, swl::WindowMultipleTtl> multiple(
      connection, swl::Limit{5, 2s}, {}, swl::PrefixKey("m"), swl::CompactMember(), swl::WindowMultipleTtl(3));
  multiple.tryAcquire("a");
  CHECK(ttl_of("m:a") > 5500);
  CHECK(ttl_of("m:a") <= 6000);

  swl::SlidingWindowLimiter<swl::PrefixKey, swl::CompactMember, swl::FixedTtl> fixed(
      connection, swl::Limit{5, 2s}, {}, swl::PrefixKey("f"), swl::CompactMember(), swl::FixedTtl(30s));
  fixed.tryAcquire("a");
  CHECK(ttl_of("f:a") > 29500);
  CHECK(ttl_of("f:a") <= 30000);

  // A window that is not a whole number of milliseconds gets Redis's next millisecond up.
  swl::SlidingWindowLimiter<swl::PrefixKey> uneven(connection, swl::Limit{5, 2'000'500us}, {}, swl::PrefixKey("u"));
  uneven.tryAcquire("a");
  CHECK(ttl_of("u:a") > 1500);
  CHECK(ttl_of("u:a") <= 2001);

  // A TTL shorter than the window would forget entries that still count.
  using ShortFixed = swl::SlidingWindowLimiter<swl::PrefixKey, swl::CompactMember, swl::FixedTtl>;
  CHECK_THROWS_AS(
      ShortFixed(connection, swl::Limit{5, 2s}, {}, swl::PrefixKey(), swl::CompactMember(), swl::FixedTtl(1999ms)),
      swl::InvalidArgument);
}

TEST_CASE("an idle key disappears once its window has passed") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 50ms});
  limiter.tryAcquire("idle");
  CHECK(integerReply(connection, {"EXISTS", "swl:idle"}) == 1);
  // Expiry runs on Redis's own clock; poll it (bounded) rather than guess a sleep.
  for (int i = 0; i < 100 && integerReply(connection, {"EXISTS", "swl:idle"}) == 1; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(integerReply(connection, {"EXISTS", "swl:idle"}) == 0);
}

TEST_CASE("a SCRIPT FLUSH mid-stream is recovered invisibly, counts intact") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{4, 60s});
  CHECK(limiter.tryAcquire("k").remaining == 3);
  CHECK(limiter.tryAcquire("k").remaining == 2);
  textReply(connection, {"SCRIPT", "FLUSH"});
  CHECK(limiter.tryAcquire("k").remaining == 1);
  CHECK(limiter.tryAcquire("k").remaining == 0);
  CHECK_FALSE(limiter.tryAcquire("k").allowed);
  CHECK(commandCalls(connection, "script|load") == 2);  // first use, then after the flush
}

TEST_CASE("only EVALSHA runs the script, never EVAL") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 60s});
  for (int i = 0; i < 10; ++i) limiter.tryAcquire("k" + std::to_string(i % 4));
  CHECK(commandCalls(connection, "evalsha") == 11);  // 10, plus the one NOSCRIPT before the first load
  CHECK(commandCalls(connection, "eval") == 0);
}

TEST_CASE("when Redis is down each failure policy answers, and the same limiter recovers when it returns") {
  RedisServer server;
  auto connection = server.connect(swl::test::failFast());

  swl::LimiterOptions throwing, failing_open, failing_closed;
  failing_open.on_failure = swl::FailurePolicy::allow;
  failing_closed.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<> throws(connection, swl::Limit{2, 10s}, throwing, swl::PrefixKey("a"));
  swl::SlidingWindowLimiter<> opens(connection, swl::Limit{2, 10s}, failing_open, swl::PrefixKey("b"));
  swl::SlidingWindowLimiter<> closes(connection, swl::Limit{2, 10s}, failing_closed, swl::PrefixKey("c"));
  CHECK(opens.tryAcquire("k").tier == swl::Tier::redis);

  server.stop();
  CHECK_THROWS_AS(throws.tryAcquire("k"), swl::ConnectionError);
  swl::Decision open = opens.tryAcquire("k");
  CHECK(open.allowed);
  CHECK(open.tier == swl::Tier::fail_open);
  swl::Decision closed = closes.tryAcquire("k");
  CHECK_FALSE(closed.allowed);
  CHECK(closed.tier == swl::Tier::fail_closed);
  CHECK(closed.retry_after == 1s);

  server.start();  // same port, empty dataset, empty script cache
  swl::Decision back = opens.tryAcquire("k");
  CHECK(back.tier == swl::Tier::redis);
  CHECK(back.remaining == 1);
  CHECK(throws.tryAcquire("k").allowed);
  CHECK(closes.tryAcquire("k").tier == swl::Tier::redis);
}

TEST_CASE("a command that timed out is never sent again, so nothing is counted twice") {
  RedisServer server;
  auto connection = server.connect(swl::test::failFast(200ms));
  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s}, fail_open);
  swl::SlidingWindowLimiter<> throwing(connection, swl::Limit{10, 60s});
  CHECK(limiter.tryAcquire("k").remaining == 9);

  server.pause();
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::fail_open);
  CHECK_THROWS_AS(throwing.tryAcquire("k"), swl::TimeoutError);
  server.resume();

  // The first timed-out call reached the server's socket before the freeze ended and runs once it does;
  // the second timed out reconnecting (its greeting PING went unanswered), before its script went out.
  auto observer = server.connect();
  for (int i = 0; i < 200 && logEntries(observer, "swl:k") < 2; ++i) std::this_thread::sleep_for(10ms);
  CHECK(logEntries(observer, "swl:k") == 2);
  // Neither is sent again: the next call adds exactly one entry.
  swl::Decision after = limiter.tryAcquire("k");
  CHECK(after.tier == swl::Tier::redis);
  CHECK(after.remaining == 7);
  CHECK(logEntries(connection, "swl:k") == 3);
}

TEST_CASE("bad input is refused with a named reason before anything reaches Redis") {
  RedisServer server;
  auto connection = server.connect();
  using Limiter = swl::SlidingWindowLimiter<>;
  CHECK_THROWS_WITH(Limiter(connection, swl::Limit{0, 1s}), Catch::Contains("max_requests 0"));
  CHECK_THROWS_AS(Limiter(connection, swl::Limit{-5, 1s}), swl::InvalidArgument);
  CHECK_THROWS_WITH(Limiter(connection, swl::Limit{5, 0s}), Catch::Contains("window"));
  CHECK_THROWS_AS(Limiter(connection, swl::Limit{5, -1s}), swl::InvalidArgument);

  Limiter limiter(connection, swl::Limit{3, 1s});
  CHECK_THROWS_WITH(limiter.tryAcquire(""), Catch::Contains("key is empty"));
  CHECK_THROWS_WITH(limiter.tryAcquire("k", 0), Catch::Contains("cost 0 is not positive"));
  CHECK_THROWS_AS(limiter.tryAcquire("k", -2), swl::InvalidArgument);
  CHECK_THROWS_WITH(limiter.tryAcquire("k", 4), Catch::Contains("exceeds the limit of 3"));

  // Even a fail-open limiter never admits a request that can never fit.
  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  Limiter lenient(connection, swl::Limit{3, 1s}, fail_open);
  CHECK_THROWS_AS(lenient.tryAcquire("k", 4), swl::InvalidArgument);

  CHECK(commandCalls(connection, "evalsha") == 0);
  CHECK(integerReply(connection, {"DBSIZE"}) == 0);
}

TEST_CASE("keys are binary-safe: NUL bytes, spaces, braces and non-UTF-8 bytes are distinct keys") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{1, 60s});
  const std::vector<std::string> keys{
      std::string("a\0b", 3), std::string("a\0c", 3), "a b", "{a}", "a}", "\xff\xfe", "a"};
  for (const std::string& key : keys) CHECK(limiter.tryAcquire(key).allowed);
  for (const std::string& key : keys) CHECK_FALSE(limiter.tryAcquire(key).allowed);
  CHECK(integerReply(connection, {"DBSIZE"}) == static_cast<long long>(keys.size()));
  CHECK(integerReply(connection, {"EXISTS", std::string("swl:a\0b", 7)}) == 1);
  CHECK(integerReply(connection, {"EXISTS", "swl:\xff\xfe"}) == 1);
}

TEST_CASE("one connection serves several limiters, each with its own keys") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> per_second(connection, swl::Limit{2, 1s}, {}, swl::PrefixKey("rps"));
  swl::SlidingWindowLimiter<swl::HashTagKey> per_hour(connection, swl::Limit{3, 3600s}, {}, swl::HashTagKey("rph"));
  CHECK(per_second.tryAcquire("u").allowed);
  CHECK(per_hour.tryAcquire("u").allowed);
  CHECK(per_second.tryAcquire("u").allowed);
  CHECK_FALSE(per_second.tryAcquire("u").allowed);
  CHECK(per_hour.tryAcquire("u").remaining == 1);
  CHECK(per_second.redisKey("u") == "rps:u");
  CHECK(per_hour.redisKey("u") == "rph:{u}");
  CHECK(logEntries(connection, "rps:u") == 2);
  CHECK(logEntries(connection, "rph:{u}") == 2);
}

TEST_CASE("by default the window runs on Redis's clock, not the caller's") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 60s});
  const auto before = commandCalls(connection, "time");  // connected: its handshake read Redis's clock too
  limiter.tryAcquire("k");
  limiter.tryAcquire("k");
  CHECK(commandCalls(connection, "time") - before == 2);  // the script asked Redis for the time, once per decision
  swl::Reply time = connection.command({"TIME"});
  const long long redis_now_us =
      std::stoll(std::string((*time)[0].text())) * 1'000'000 + std::stoll(std::string((*time)[1].text()));
  swl::Reply entry = connection.command({"ZRANGE", "swl:k", "-1", "-1", "WITHSCORES"});
  REQUIRE(entry->size() == 2);
  const long long score = std::stoll(std::string((*entry)[1].text()));
  CHECK(score <= redis_now_us);
  CHECK(score > redis_now_us - 5'000'000);
}

TEST_CASE("on Redis's clock a set of weighted entries weighs a request of one unit against its sums") {
  RedisServer server;
  auto connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s});
  REQUIRE(limiter.tryAcquire("k", 8).allowed);
  // One unit: the busiest path records it before it knows how the set counts, and takes it back here.
  const swl::Decision first = limiter.tryAcquire("k");
  CHECK(first.allowed);
  CHECK(first.remaining == 1);
  CHECK(limiter.tryAcquire("k").remaining == 0);
  const swl::Decision refused = limiter.tryAcquire("k");
  CHECK_FALSE(refused.allowed);
  CHECK(refused.retry_after > 59s);
  CHECK(refused.retry_after <= 60s);
  CHECK(logEntries(connection, "swl:k") == 3);
  CHECK(swl::test::logLayoutProblem(connection, "swl:k") == "");
}

TEST_CASE("a member repeated from before a set counted by units leaves no trace once the set is read again") {
  RedisServer server;
  auto connection = server.connect();
  struct Repeating {
    std::string next() { return "same"; }
  };
  swl::SlidingWindowLimiter<swl::PrefixKey, Repeating> limiter(connection, swl::Limit{10, 60s});
  REQUIRE(limiter.tryAcquire("k").allowed);     // counted by entries: "same"
  REQUIRE(limiter.tryAcquire("k", 3).allowed);  // counted by units from here on
  // The busiest path cannot tell this repeat from an entry of a set counted by entries: it records
  // nothing for it, and leaves its mark.
  limiter.tryAcquire("k");
  const swl::Decision next = limiter.tryAcquire("k", 2);  // the set is read again: the mark goes
  CHECK(next.allowed);
  CHECK(next.remaining == 4);
  CHECK(swl::test::logLayoutProblem(connection, "swl:k") == "");
}

TEST_CASE("the system clock policy scores entries with this host's time, to the microsecond") {
  RedisServer server;
  auto connection = server.connect();
  swl::LimiterOptions options;
  options.clock = swl::Clock::system();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 60s}, options);
  const auto times = commandCalls(connection, "time");  // the handshake's
  const auto before =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch());
  limiter.tryAcquire("k");
  CHECK(commandCalls(connection, "time") == times);  // the script took the time it was given
  const auto after =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch());
  swl::Reply entry = connection.command({"ZRANGE", "swl:k", "-1", "-1", "WITHSCORES"});
  REQUIRE(entry->size() == 2);
  const long long score = std::stoll(std::string((*entry)[1].text()));
  CHECK(score >= before.count());
  CHECK(score <= after.count());
}

TEST_CASE_METHOD(ManualTime, "sixteen-digit microsecond times survive the script without losing digits") {
  clock.set(std::chrono::microseconds(1'700'000'000'123'457));
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 1s}, options);
  limiter.tryAcquire("k");
  swl::Reply entry = connection.command({"ZRANGE", "swl:k", "-1", "-1", "WITHSCORES"});
  REQUIRE(entry->size() == 2);
  CHECK((*entry)[1].text() == "1700000000123457");
}

TEST_CASE_METHOD(ManualTime,
                 "timestamp members collide within a millisecond and let the limit be exceeded, compact ones do not") {
  swl::SlidingWindowLimiter<swl::PrefixKey, swl::TimestampMember> timestamps(connection, swl::Limit{3, 1s}, options,
                                                                             swl::PrefixKey("ts"));
  swl::SlidingWindowLimiter<> compact(connection, swl::Limit{3, 1s}, options, swl::PrefixKey("cm"));

  int admitted_by_timestamps = 0, admitted_by_compact = 0;
  for (int i = 0; i < 10; ++i) {  // ten requests in the same millisecond
    admitted_by_timestamps += timestamps.tryAcquire("k").allowed ? 1 : 0;
    admitted_by_compact += compact.tryAcquire("k").allowed ? 1 : 0;
    clock.advance(50us);
  }
  CHECK(logEntries(connection, "ts:k") == 1);  // each ZADD moved the one member
  CHECK(admitted_by_timestamps == 10);         // so the window held one entry, and the limit of 3 never bit
  CHECK(logEntries(connection, "cm:k") == 3);
  CHECK(admitted_by_compact == 3);
  swl::Reply member = connection.command({"ZRANGE", "ts:k", "-1", "-1"});
  REQUIRE(member->size() == 1);
  CHECK((*member)[0].text() == std::to_string(clock.now().count() / 1000));
}
