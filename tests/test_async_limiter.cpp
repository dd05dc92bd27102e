#include <swl/async/limiter.hpp>
#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <event2/event.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::commandCalls;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::RedisServer;
using swl::test::textReply;

namespace {

struct LoopDeleter {
  void operator()(event_base* loop) const noexcept { event_base_free(loop); }
};
using Loop = std::unique_ptr<event_base, LoopDeleter>;

// Turns the loop until `done()` or the deadline; false on the deadline.
template <class Done>
bool runUntil(event_base* loop, Done done, std::chrono::milliseconds deadline = 10s) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    event_base_loop(loop, EVLOOP_ONCE | EVLOOP_NONBLOCK);
  }
  return true;
}

// Each request's callback, recorded by request index, so a second call shows up.
struct Answers {
  explicit Answers(std::size_t requests) : outcomes(requests), calls(requests, 0) {}

  swl::AsyncSlidingWindowLimiter<>::Callback of(std::size_t request) {
    return [this, request](swl::Outcome outcome) {
      outcomes[request] = std::move(outcome);
      ++calls[request];
      ++answered;
    };
  }
  bool allCalledOnce() const {
    for (int count : calls) {
      if (count != 1) return false;
    }
    return true;
  }

  std::vector<swl::Outcome> outcomes;
  std::vector<int> calls;
  std::size_t answered = 0;
};

}  // namespace

TEST_CASE("1,000 async requests in flight on one connection admit exactly the limit, each answered once") {
  RedisServer server;
  Loop loop(event_base_new());
  Answers answers(1000);
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), swl::test::patient());
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{100, 60s});

  for (std::size_t i = 0; i < 1000; ++i) limiter.tryAcquire("shared", answers.of(i));
  CHECK(redis.inFlight() == 1000);
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 1000; }));

  CHECK(answers.allCalledOnce());
  int admitted = 0;
  for (std::size_t i = 0; i < 1000; ++i) {
    const swl::Decision& decision = answers.outcomes[i].value();
    admitted += decision.allowed;
    CHECK(decision.allowed == (i < 100));  // one connection: decided in send order
  }
  CHECK(admitted == 100);
  auto observer = server.connect();
  CHECK(logEntries(observer, "swl:shared") == 100);
  CHECK(commandCalls(observer, "script|load") == 1);  // 1,000 NOSCRIPTs, one load
}

TEST_CASE("an async limiter blocks a key that passed its limit (LimiterOptions::block_for), as the blocking one does") {
  RedisServer server;
  Loop loop(event_base_new());
  Answers answers(4);
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), swl::test::patient());
  swl::LimiterOptions options;
  options.block_for = 60s;
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{2, 60s}, options);
  for (std::size_t i = 0; i < 4; ++i) limiter.tryAcquire("abuser", answers.of(i));
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 4; }));
  CHECK(answers.outcomes[1].value().allowed);
  CHECK(answers.outcomes[2].value().tier == swl::Tier::redis);  // the refusal that blocks
  CHECK(answers.outcomes[2].value().retry_after == 60s);
  CHECK(answers.outcomes[3].value().tier == swl::Tier::blocked);
  CHECK(answers.outcomes[3].value().retry_after <= 60s);
}

TEST_CASE("a batch may take longer in all than command_timeout while Redis keeps answering, on the loop too") {
  RedisServer server;
  Loop loop(event_base_new());
  swl::ConnectionOptions options = swl::test::patient();
  // Each wait for a reply: far longer than the pauses below, and than what a loaded, sanitized run adds.
  options.command_timeout = 1s;
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), options);
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10'000'000, 600s});
  constexpr std::size_t kRequests = 40'000;
  Answers answers(kRequests);
  // Redis answers in bursts and is stopped between them: each wait for a reply lasts a pause, shorter
  // than command_timeout; the batch as a whole lasts several, longer.
  server.pause();
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < kRequests; ++i) limiter.tryAcquire("k" + std::to_string(i % 1000), answers.of(i));
  std::atomic<bool> finished{false};
  std::thread bursts([&] {
    while (!finished) {
      std::this_thread::sleep_for(300ms);
      server.resume();
      std::this_thread::sleep_for(40ms);
      server.pause();
    }
    server.resume();
  });
  const bool answered = runUntil(
      loop.get(), [&] { return answers.answered == kRequests; }, 60s);
  const auto took = std::chrono::steady_clock::now() - started;
  finished = true;
  bursts.join();
  REQUIRE(answered);
  std::size_t admitted = 0;
  for (const swl::Outcome& outcome : answers.outcomes) admitted += outcome.value().allowed ? 1 : 0;  // no timeout
  CHECK(admitted == kRequests);
  CHECK(took > options.command_timeout);
}

TEST_CASE("a batch queued for longer than command_timeout in one turn of the loop waits from when it goes out") {
  RedisServer server;
  Loop loop(event_base_new());
  swl::ConnectionOptions options = swl::test::patient();
  options.command_timeout = 1s;
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), options);
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{1000, 60s});
  Answers answers(100);
  for (std::size_t i = 0; i < 100; ++i) {
    limiter.tryAcquire("k", answers.of(i));
    // The caller keeps the loop's thread: nothing is written meanwhile, so nothing can be answered.
    if (i == 0) std::this_thread::sleep_for(1100ms);
  }
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 100; }));
  for (const swl::Outcome& outcome : answers.outcomes) CHECK(outcome.value().allowed);  // none timed out
}

TEST_CASE("async calls after a SCRIPT FLUSH load the script once and repeat only what met NOSCRIPT") {
  RedisServer server;
  Loop loop(event_base_new());
  Answers first_round(50), second_round(50);
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), swl::test::patient());
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{1000, 60s});
  auto observer = server.connect();

  for (Answers* answers_of_round : {&first_round, &second_round}) {
    const int round = answers_of_round == &first_round ? 1 : 2;
    Answers& answers = *answers_of_round;
    textReply(observer, {"SCRIPT", "FLUSH"});
    for (std::size_t i = 0; i < 50; ++i) limiter.tryAcquire("k", answers.of(i));
    REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 50; }));
    CHECK(answers.allCalledOnce());
    for (const swl::Outcome& outcome : answers.outcomes) CHECK(outcome.value().allowed);
    CHECK(commandCalls(observer, "script|load") == round);
  }
  CHECK(commandCalls(observer, "evalsha") == 200);
  CHECK(logEntries(observer, "swl:k") == 100);
}

TEST_CASE("a server killed with calls in flight fails each of them once, and the next call reconnects") {
  RedisServer server;
  Loop loop(event_base_new());
  // Declared before the connection: its destructor may still answer calls in flight.
  Answers warm_up(1), answers(200), after(3);
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), swl::test::patient());
  swl::LimiterOptions options;
  options.on_failure = swl::FailurePolicy::deny;
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s}, options);

  limiter.tryAcquire("k", warm_up.of(0));
  REQUIRE(runUntil(loop.get(), [&] { return warm_up.answered == 1; }));
  REQUIRE(redis.isConnected());

  server.pause();
  for (std::size_t i = 0; i < 200; ++i) limiter.tryAcquire("k", answers.of(i));
  CHECK(redis.inFlight() == 200);
  CHECK_FALSE(runUntil(
      loop.get(), [&] { return answers.answered > 0; }, 100ms));  // a frozen server answers nothing
  server.kill();
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 200; }));
  CHECK(answers.allCalledOnce());
  for (const swl::Outcome& outcome : answers.outcomes) {
    CHECK(outcome.ok());
    CHECK(outcome.decision.tier == swl::Tier::fail_closed);
  }
  CHECK(redis.inFlight() == 0);

  server.start();  // same port, empty dataset and script cache
  for (std::size_t i = 0; i < 3; ++i) limiter.tryAcquire("k", after.of(i));
  REQUIRE(runUntil(loop.get(), [&] { return after.answered == 3; }));
  for (const swl::Outcome& outcome : after.outcomes) {
    CHECK(outcome.decision.tier == swl::Tier::redis);
    CHECK(outcome.decision.allowed);
  }
}

TEST_CASE("a frozen server: async calls time out after command_timeout with a TimeoutError, then recover") {
  RedisServer server;
  Loop loop(event_base_new());
  Answers answers(5);
  Answers after(1);
  swl::ConnectionOptions connection_options = swl::test::failFast(100ms);
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), connection_options);
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s});

  server.pause();
  const auto sent = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < 5; ++i) limiter.tryAcquire("k", answers.of(i));
  REQUIRE(runUntil(
      loop.get(), [&] { return answers.answered == 5; }, 5s));
  const auto waited = std::chrono::steady_clock::now() - sent;
  CHECK(waited >= 100ms);
  CHECK(waited < 1s);
  CHECK(answers.allCalledOnce());
  for (const swl::Outcome& outcome : answers.outcomes) {
    CHECK_FALSE(outcome.ok());
    CHECK_FALSE(outcome.decision.allowed);
    CHECK_THROWS_AS(outcome.value(), swl::TimeoutError);
    CHECK_THROWS_WITH(outcome.value(), Catch::Contains("timed out"));
  }

  server.resume();
  limiter.tryAcquire("k", after.of(0));
  REQUIRE(runUntil(loop.get(), [&] { return after.answered == 1; }));
  CHECK(after.outcomes[0].value().tier == swl::Tier::redis);
}

TEST_CASE(
    "under deny, async calls a frozen server left unanswered are refused no earlier than their deadlines and never "
    "counted once it resumes") {
  RedisServer server;
  Loop loop(event_base_new());
  swl::LimiterOptions options;
  options.on_failure = swl::FailurePolicy::deny;
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), swl::test::failFast(200ms));
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s}, options);
  Answers warm(1);
  limiter.tryAcquire("k", warm.of(0));  // connected, Redis's clock read, the script loaded
  REQUIRE(runUntil(loop.get(), [&] { return warm.answered == 1; }));

  server.pause();
  // Two waves: the first's timeout drops the connection while the second's deadlines are still to come.
  Answers answers(6);
  std::vector<std::chrono::steady_clock::time_point> sent(6), answered(6);
  const auto send = [&](std::size_t i) {
    sent[i] = std::chrono::steady_clock::now();
    limiter.tryAcquire("k", [&, i, done = answers.of(i)](swl::Outcome outcome) mutable {
      answered[i] = std::chrono::steady_clock::now();
      done(std::move(outcome));
    });
  };
  for (std::size_t i = 0; i < 3; ++i) send(i);
  runUntil(
      loop.get(), [] { return false; }, 100ms);
  for (std::size_t i = 3; i < 6; ++i) send(i);
  const bool ended = runUntil(
      loop.get(), [&] { return answers.answered == 6; }, 5s);
  server.resume();
  REQUIRE(ended);
  CHECK(answers.allCalledOnce());
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(answers.outcomes[i].value().tier == swl::Tier::fail_closed);
    CHECK(answered[i] - sent[i] >= 200ms);  // never before its deadline, whenever the connection went
  }
  // Redis read them all before it stopped, and ran them when it resumed: past their deadlines, each
  // recorded nothing.
  swl::Connection asking = server.connect();
  CHECK(swl::SlidingWindowLimiter<>(asking, limiter.limit()).peek("k").used == 1);
}

TEST_CASE("an unreachable Redis answers on the loop's next turn, never inside tryAcquire") {
  RedisServer server;
  const int port = server.port();
  server.stop();
  Loop loop(event_base_new());
  Answers answers(2);
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", port);
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s});

  limiter.tryAcquire("k", answers.of(0));
  CHECK(answers.answered == 0);
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 1; }));
  CHECK_THROWS_AS(answers.outcomes[0].value(), swl::ConnectionError);
  // Within the breaker's cool-down the next call does not dial again; it still answers on the loop.
  limiter.tryAcquire("k", answers.of(1));
  CHECK(answers.answered == 1);
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 2; }));
  CHECK_THROWS_AS(answers.outcomes[1].value(), swl::CircuitOpenError);
  CHECK_THROWS_WITH(answers.outcomes[1].value(), Catch::Contains("is not asked for another"));
}

TEST_CASE("an async limiter refuses bad requests at once, before anything is sent") {
  RedisServer server;
  Loop loop(event_base_new());
  Answers answers(1);
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port());
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s});
  CHECK_THROWS_AS(limiter.tryAcquire("k", 0, answers.of(0)), swl::InvalidArgument);
  CHECK_THROWS_AS(limiter.tryAcquire("", 1, answers.of(0)), swl::InvalidArgument);
  CHECK_THROWS_AS(limiter.tryAcquire("k", 1, nullptr), swl::InvalidArgument);
  CHECK_THROWS_AS(swl::AsyncConnection::tcp(nullptr, "127.0.0.1", 1), swl::InvalidArgument);
  swl::ConnectionOptions negative_db;
  negative_db.db = -1;  // the same checks as the blocking Connection
  CHECK_THROWS_WITH(swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", 1, negative_db), Catch::Contains("db -1"));
  CHECK(redis.inFlight() == 0);
}

TEST_CASE("an async connection authenticates, and a wrong password is an AuthError without the password") {
  RedisServer server({"--requirepass", "s3cret-pass"});
  Loop loop(event_base_new());
  Answers answers(1);
  Answers refusals(1);
  swl::ConnectionOptions good;
  good.password = "s3cret-pass";
  good.db = 3;
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), good);
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s});
  limiter.tryAcquire("k", answers.of(0));
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 1; }));
  CHECK(answers.outcomes[0].value().allowed);
  auto observer = server.connect(good);  // SELECTs db 3 too
  CHECK(logEntries(observer, "swl:k") == 1);

  swl::ConnectionOptions wrong;
  wrong.password = "not-the-password";
  auto refused = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), wrong);
  swl::AsyncSlidingWindowLimiter<> refused_limiter(refused, swl::Limit{10, 60s});
  refused_limiter.tryAcquire("k", refusals.of(0));
  REQUIRE(runUntil(loop.get(), [&] { return refusals.answered == 1; }));
  CHECK_THROWS_AS(refusals.outcomes[0].value(), swl::AuthError);
  CHECK_THROWS_WITH(refusals.outcomes[0].value(), !Catch::Contains("not-the-password"));
}

TEST_CASE("destroying an async connection answers its calls in flight, even after their limiter is gone") {
  RedisServer server;
  Loop loop(event_base_new());
  Answers answers(10);
  {
    auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port());
    swl::LimiterOptions options;
    options.on_failure = swl::FailurePolicy::allow;
    swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s}, options);
    for (std::size_t i = 0; i < 10; ++i) limiter.tryAcquire("k", answers.of(i));
  }
  CHECK(answers.answered == 10);
  CHECK(answers.allCalledOnce());
  for (const swl::Outcome& outcome : answers.outcomes) CHECK(outcome.decision.tier == swl::Tier::fail_open);
}

TEST_CASE("async acquire waits on the loop for a permit, admits exactly, and gives up before an unmeetable deadline") {
  RedisServer server;
  Loop loop(event_base_new());
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), swl::test::patient());
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{3, 200ms});

  // Nine permits wanted at once: three per window, so the last ones come two windows later.
  const auto started = std::chrono::steady_clock::now();
  Answers answers(9);
  for (std::size_t i = 0; i < 9; ++i) limiter.acquire("crawler", 1, started + 5s, answers.of(i));
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 9; }));
  CHECK(std::chrono::steady_clock::now() - started >= 400ms);
  CHECK(answers.allCalledOnce());
  for (const swl::Outcome& outcome : answers.outcomes) CHECK(outcome.value().allowed);
  auto observer = server.connect();
  CHECK(commandCalls(observer, "evalsha") < 9 + 9 * 4);  // timers, not spinning

  // A deadline too near for the next permit (some 200 ms away): the refusal comes back at once, not at
  // the deadline.
  Answers impatient(1);
  const auto asked = std::chrono::steady_clock::now();
  limiter.acquire("crawler", 1, asked + 100ms, impatient.of(0));
  REQUIRE(runUntil(loop.get(), [&] { return impatient.answered == 1; }));
  CHECK_FALSE(impatient.outcomes[0].value().allowed);
  CHECK(std::chrono::steady_clock::now() - asked < 100ms);
}

TEST_CASE("the async limiter reports every decision and error to its observer, on the loop, before the callback") {
  RedisServer server;
  Loop loop(event_base_new());
  std::vector<std::pair<swl::Verdict, swl::Tier>> seen;
  std::size_t seen_before_callback = 0;
  swl::LimiterOptions options;
  options.observer = [&](const swl::DecisionEvent& event) { seen.emplace_back(event.verdict, event.tier); };
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), swl::test::patient());
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{1, 60s}, options);

  Answers answers(2);
  limiter.tryAcquire("k", [&](swl::Outcome outcome) {
    seen_before_callback = seen.size();
    answers.of(0)(std::move(outcome));
  });
  limiter.tryAcquire("k", answers.of(1));
  CHECK_THROWS_AS(limiter.tryAcquire("", answers.of(1)), swl::InvalidArgument);
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 2; }));
  CHECK(seen_before_callback == 2);  // the error thrown at once, then the first decision
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == std::pair(swl::Verdict::error, swl::Tier::redis));
  CHECK(seen[1] == std::pair(swl::Verdict::allowed, swl::Tier::redis));
  CHECK(seen[2] == std::pair(swl::Verdict::rejected, swl::Tier::redis));

  server.stop();
  options.on_failure = swl::FailurePolicy::deny;
  swl::AsyncSlidingWindowLimiter<> denying(redis, swl::Limit{1, 60s}, options);
  Answers down(1);
  denying.tryAcquire("k", down.of(0));
  REQUIRE(runUntil(loop.get(), [&] { return down.answered == 1; }));
  CHECK(down.outcomes[0].decision.tier == swl::Tier::fail_closed);
  REQUIRE(seen.size() == 4);
  CHECK(seen[3] == std::pair(swl::Verdict::rejected, swl::Tier::fail_closed));
}

TEST_CASE("closing an async connection answers its calls in flight and leaves nothing that keeps the loop running") {
  RedisServer server;
  Loop loop(event_base_new());
  Answers warm_up(1), in_flight(3), later(1);
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), swl::test::patient());
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s});
  limiter.tryAcquire("k", warm_up.of(0));
  REQUIRE(runUntil(loop.get(), [&] { return warm_up.answered == 1; }));

  server.pause();  // so that these three are still in flight when the connection closes
  for (std::size_t i = 0; i < 3; ++i) limiter.tryAcquire("k", in_flight.of(i));
  redis.close();
  server.resume();
  CHECK(in_flight.answered == 3);
  for (const swl::Outcome& outcome : in_flight.outcomes) CHECK_THROWS_WITH(outcome.value(), Catch::Contains("closed"));

  limiter.tryAcquire("k", later.of(0));
  CHECK(later.answered == 0);  // never inside tryAcquire, even now
  // With nothing of the connection left on it, the loop runs the last callback and returns by itself.
  CHECK(event_base_dispatch(loop.get()) == 1);  // 1: no events left
  CHECK(later.answered == 1);
  CHECK_THROWS_AS(later.outcomes[0].value(), swl::ConnectionError);
}

TEST_CASE("an async limiter takes a limit per call, and keeps shadow mode") {
  RedisServer server;
  Loop loop(event_base_new());
  auto redis = swl::AsyncConnection::tcp(loop.get(), "127.0.0.1", server.port(), swl::test::patient());
  swl::LimiterOptions options;
  options.enforcement = swl::Enforcement::shadow;
  swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s}, options);
  Answers answers(4);
  for (std::size_t i = 0; i < 4; ++i) limiter.tryAcquire("k", 1, swl::Limit{3, 60s}, answers.of(i));
  REQUIRE(runUntil(loop.get(), [&] { return answers.answered == 4; }));
  CHECK_FALSE(answers.outcomes[2].value().shadow_rejected);
  const swl::Decision& fourth = answers.outcomes[3].value();
  CHECK(fourth.allowed);  // shadow mode admits it
  CHECK(fourth.shadow_rejected);
  CHECK(fourth.limit == 3);
  auto observer = server.connect();
  CHECK(logEntries(observer, "swl:k") == 3);
}
