#include <swl/asio/limiter.hpp>
#include <swl/swl.hpp>

#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#ifdef SWL_USE_BOOST_ASIO
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_future.hpp>
#else
#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/experimental/parallel_group.hpp>
#include <asio/use_future.hpp>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::patient;
using swl::test::RedisServer;

namespace {

using Clock = std::chrono::steady_clock;

swl::AsioConnection connect(swl::asio::io_context& io, const RedisServer& server,
                            swl::ConnectionOptions options = patient()) {
  return swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", server.port(), options);
}

// Turns the io_context until `done()` or the deadline; false on the deadline.
template <class Done>
bool runUntil(swl::asio::io_context& io, Done done, std::chrono::milliseconds deadline = 20s) {
  const auto until = Clock::now() + deadline;
  io.restart();
  while (!done()) {
    if (Clock::now() > until) return false;
    io.run_one_for(10ms);
    io.restart();
  }
  return true;
}

// Every completion of a test, by call index: a second one shows up as a count of 2.
struct Completions {
  explicit Completions(std::size_t calls) : decisions(calls), errors(calls), counts(calls, 0) {}
  auto of(std::size_t call) {
    return [this, call](swl::asio_error_code error, swl::Decision decision) {
      decisions[call] = decision;
      errors[call] = error;
      ++counts[call];
      ++completed;
    };
  }
  bool eachOnce() const {
    for (int count : counts) {
      if (count != 1) return false;
    }
    return true;
  }
  int admitted() const {
    int admitted = 0;
    for (const swl::Decision& decision : decisions) admitted += decision.allowed ? 1 : 0;
    return admitted;
  }
  std::vector<swl::Decision> decisions;
  std::vector<swl::asio_error_code> errors;
  std::vector<int> counts;
  std::size_t completed = 0;
};

// One call of one unit for `key`, run to its end: what it decided (before a test stops the server, it
// leaves the connection up and the script loaded).
template <class Limiter>
swl::Decision decideOne(swl::asio::io_context& io, Limiter& limiter, std::string_view key = "key") {
  Completions one(1);
  limiter.async_try_acquire(key, 1, one.of(0));
  REQUIRE(runUntil(io, [&] { return one.completed == 1; }));
  return one.decisions[0];
}

// `io` run by `runners` threads while `callers` threads each start `calls` decisions of one unit for one
// key through `limiter`; how many were admitted, completed and failed once all have completed (or 20 s).
struct FromThreads {
  int admitted = 0, completed = 0, failed = 0;
};
template <class Limiter>
FromThreads decideFromThreads(swl::asio::io_context& io, Limiter& limiter, int runners, int callers, int calls) {
  auto work = swl::asio::make_work_guard(io);
  std::vector<std::thread> running;
  for (int i = 0; i < runners; ++i) running.emplace_back([&] { io.run(); });
  std::atomic<int> admitted{0}, completed{0}, failed{0};
  std::vector<std::thread> calling;
  for (int t = 0; t < callers; ++t) {
    calling.emplace_back([&] {
      for (int i = 0; i < calls; ++i) {
        limiter.async_try_acquire("shared", 1, [&](swl::asio_error_code error, swl::Decision decision) {
          if (error) ++failed;
          if (decision.allowed) ++admitted;
          ++completed;
        });
      }
    });
  }
  for (std::thread& caller : calling) caller.join();
  const auto until = Clock::now() + 20s;
  while (completed < callers * calls && Clock::now() < until) std::this_thread::sleep_for(5ms);
  work.reset();
  io.stop();  // the connections stay open: their reads would keep run() going
  for (std::thread& runner : running) runner.join();
  return {admitted, completed, failed};
}

}  // namespace

TEST_CASE("1,000 calls in flight on one Asio connection admit exactly the limit, each completed once") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{100, 60s});
  Completions completions(1000);

  for (std::size_t i = 0; i < 1000; ++i) limiter.async_try_acquire("shared", 1, completions.of(i));
  CHECK(completions.completed == 0);  // never inside the call that started it
  REQUIRE(runUntil(io, [&] { return completions.completed == 1000; }));

  CHECK(completions.eachOnce());
  CHECK(completions.admitted() == 100);
  for (std::size_t i = 0; i < 1000; ++i) {
    CHECK(!completions.errors[i]);
    CHECK(completions.decisions[i].tier == swl::Tier::redis);
  }
  CHECK(redis.endpoint() == "127.0.0.1:" + std::to_string(server.port()));
}

TEST_CASE("use_future: a decision, a peek, a batch and a reset awaited from a thread the io_context does not run on") {
  RedisServer server;
  swl::asio::io_context io;
  auto work = swl::asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  {
    auto redis = connect(io, server);
    swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{3, 60s});

    const swl::Decision first = limiter.async_try_acquire("user", 2, swl::asio::use_future).get();
    CHECK(first.allowed);
    CHECK(first.remaining == 1);
    CHECK(limiter.async_peek("user", swl::asio::use_future).get().used == 2);
    const std::vector<swl::Outcome> batch =
        limiter.async_try_acquire_many({{"user", 1}, {"user", 1}, {"other", 9}}, swl::asio::use_future).get();
    REQUIRE(batch.size() == 3);
    CHECK(batch[0].decision.allowed);
    CHECK(!batch[1].decision.allowed);
    CHECK(batch[1].decision.retry_after > 0us);
    CHECK(!batch[2].ok());  // a cost above the limit spoils its own Outcome only
    CHECK(limiter.async_reset("user", swl::asio::use_future).get());
    CHECK(!limiter.async_reset("user", swl::asio::use_future).get());
    CHECK(limiter.async_peek("user", swl::asio::use_future).get().used == 0);
  }
  work.reset();
  runner.join();
}

TEST_CASE(
    "bad input ends the operation through its token with invalid_argument, never a throw from the call that "
    "starts it, and nothing is sent") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  std::vector<std::string> told;
  swl::LimiterOptions options;
  options.observer = [&](const swl::DecisionEvent& event) {
    if (event.error != nullptr) told.push_back(event.error->what());
  };
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{5, 60s}, options);
  Completions completions(4);
  swl::AcquireOptions zero_limit;
  zero_limit.limit = swl::Limit{0, 1s};
  swl::AcquireOptions no_time;
  no_time.timeout = 0ms;
  limiter.async_try_acquire("", completions.of(0));
  limiter.async_try_acquire("key", 6, completions.of(1));
  limiter.async_try_acquire("key", zero_limit, completions.of(2));
  limiter.async_try_acquire("key", no_time, completions.of(3));
  swl::asio_error_code peek_error, reset_error;
  limiter.async_peek("", [&](swl::asio_error_code error, swl::Usage) { peek_error = error; });
  limiter.async_reset("", [&](swl::asio_error_code error, bool) { reset_error = error; });
  CHECK(completions.completed == 0);  // never inside the call that started it
  CHECK(!peek_error);
  REQUIRE(runUntil(io, [&] { return completions.completed == 4 && peek_error && reset_error; }));
  CHECK(completions.eachOnce());
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(completions.errors[i] == swl::AsioErrc::invalid_argument);
    CHECK(!completions.decisions[i].allowed);
  }
  CHECK(peek_error == swl::AsioErrc::invalid_argument);
  CHECK(reset_error == swl::AsioErrc::invalid_argument);
  REQUIRE(told.size() == 4);  // each refused decision reached the observer, with what was wrong
  CHECK(told[0].find("key") != std::string::npos);
  CHECK(told[3].find("timeout must be positive") != std::string::npos);
  CHECK(server.connect().command({"DBSIZE"})->integer() == 0);
  // A token that makes the error an exception (use_awaitable) carries it: test_asio_coroutines.cpp.
}

TEST_CASE("an operation given no completion token is deferred: it starts when handed a token, and decides then") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{5, 60s});
  auto deferred = limiter.async_try_acquire("key", 2);
  io.run_for(50ms);
  CHECK(server.connect().command({"EXISTS", limiter.redisKey("key")})->integer() == 0);  // not started
  Completions completions(1);
  std::move(deferred)(completions.of(0));
  REQUIRE(runUntil(io, [&] { return completions.completed == 1; }));
  CHECK(completions.decisions[0].allowed);
  CHECK(completions.decisions[0].remaining == 3);
}

TEST_CASE(
    "while Redis is stopped every Asio call is answered by the failure policy by its deadline: counted once Redis "
    "resumes if the policy admitted it, never if it refused it, and the calls after are exact") {
  RedisServer server;
  const swl::FailurePolicy policy = GENERATE(swl::FailurePolicy::allow, swl::FailurePolicy::deny);
  swl::asio::io_context io;
  auto redis = connect(io, server);
  swl::LimiterOptions options;
  options.on_failure = policy;
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s}, options);
  decideOne(io, limiter);  // connected, Redis's clock read, the script loaded

  server.pause();
  Completions stalled(20);
  std::vector<Clock::duration> waited(20);
  const auto started = Clock::now();
  for (std::size_t i = 0; i < 20; ++i) {
    swl::AcquireOptions call;
    call.timeout = 300ms;
    limiter.async_try_acquire("key", call,
                              [&, i, done = stalled.of(i)](swl::asio_error_code error, swl::Decision decision) mutable {
                                waited[i] = Clock::now() - started;
                                done(error, decision);
                              });
  }
  const bool answered = runUntil(
      io, [&] { return stalled.completed == 20; }, 10s);
  server.resume();
  REQUIRE(answered);
  CHECK(stalled.eachOnce());
  const swl::Tier tier = policy == swl::FailurePolicy::allow ? swl::Tier::fail_open : swl::Tier::fail_closed;
  for (std::size_t i = 0; i < 20; ++i) {
    CHECK(stalled.decisions[i].tier == tier);
    CHECK(!stalled.errors[i]);
    CHECK(waited[i] >= 300ms);
    CHECK(waited[i] < 300ms + 2s);  // a loaded machine may be late, never by the whole window
  }

  // Redis ran the stalled calls when it resumed (it had read them). Under allow each was served, and
  // counted (the first call and 9 more fill the window); under deny each ran past its deadline and
  // recorded nothing. The connection, still up, decides the next calls exactly against what is there.
  Completions after(12);
  for (std::size_t i = 0; i < 12; ++i) limiter.async_try_acquire("key", 1, after.of(i));
  REQUIRE(runUntil(io, [&] { return after.completed == 12; }));
  CHECK(after.eachOnce());
  for (const swl::Decision& decision : after.decisions) CHECK(decision.tier == swl::Tier::redis);
  swl::Connection blocking = server.connect();
  CHECK(swl::SlidingWindowLimiter<>(blocking, limiter.limit()).peek("key").used == 10);
  CHECK(after.admitted() == (policy == swl::FailurePolicy::allow ? 0 : 9));
}

TEST_CASE(
    "an Asio call cancelled before it was sent records nothing, and cancelled after, it ends at once with "
    "operation_aborted") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s});

  SECTION("before it was sent") {
    swl::asio::cancellation_signal signal;
    Completions completions(1);
    limiter.async_try_acquire("key", 1, swl::asio::bind_cancellation_slot(signal.slot(), completions.of(0)));
    signal.emit(swl::asio::cancellation_type::terminal);  // the io_context has not run: nothing went out
    REQUIRE(runUntil(io, [&] { return completions.completed == 1; }));
    CHECK(completions.errors[0] == swl::asio::error::operation_aborted);
    CHECK(!completions.decisions[0].allowed);
    CHECK(server.connect().command({"EXISTS", limiter.redisKey("key")})->integer() == 0);
  }
  SECTION("after it was sent, to a stopped Redis") {
    decideOne(io, limiter);  // connected, the script loaded
    server.pause();
    swl::asio::cancellation_signal signal;
    Completions completions(1);
    limiter.async_try_acquire("key", 1, swl::asio::bind_cancellation_slot(signal.slot(), completions.of(0)));
    io.run_for(100ms);  // sent, and no answer
    CHECK(completions.completed == 0);
    const auto cancelled_at = Clock::now();
    signal.emit(swl::asio::cancellation_type::terminal);
    const bool ended = runUntil(
        io, [&] { return completions.completed == 1; }, 5s);
    const auto took = Clock::now() - cancelled_at;
    server.resume();
    REQUIRE(ended);
    CHECK(took < 2s);  // not the 5 s deadline
    CHECK(completions.errors[0] == swl::asio::error::operation_aborted);
    // Redis read it before it stopped: it counts it when it resumes, as the docs say.
    CHECK(decideOne(io, limiter).remaining == 7);
  }
}

TEST_CASE("after the server restarts, the next Asio calls connect again and decide") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{5, 60s});
  Completions before(2);
  for (std::size_t i = 0; i < 2; ++i) limiter.async_try_acquire("key", 1, before.of(i));
  REQUIRE(runUntil(io, [&] { return before.completed == 2; }));
  CHECK(before.admitted() == 2);

  server.stop();
  server.start();  // empty: the log and the script cache are gone
  // The first call after the restart may meet the closed connection; within a few, one connects again.
  swl::Decision decision;
  bool decided = false;
  for (int attempt = 0; attempt < 20 && !decided; ++attempt) {
    Completions again(1);
    limiter.async_try_acquire("key", 1, again.of(0));
    REQUIRE(runUntil(io, [&] { return again.completed == 1; }));
    decision = again.decisions[0];
    decided = !again.errors[0];
    if (!decided) std::this_thread::sleep_for(20ms);
  }
  CHECK(decision.tier == swl::Tier::redis);
  CHECK(decision.allowed);
  CHECK(decision.remaining == 4);  // a fresh server: only this call is in the window
}

TEST_CASE("8 threads starting Asio calls on one connection, 4 threads running it, admit exactly the limit") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{300, 60s});
  const FromThreads outcome = decideFromThreads(io, limiter, 4, 8, 100);
  CHECK(outcome.completed == 800);
  CHECK(outcome.failed == 0);
  CHECK(outcome.admitted == 300);
}

TEST_CASE("an Asio limiter loads its script again after SCRIPT FLUSH, sending no call twice") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{50, 60s});
  Completions first(10);
  for (std::size_t i = 0; i < 10; ++i) limiter.async_try_acquire("key", 1, first.of(i));
  REQUIRE(runUntil(io, [&] { return first.completed == 10; }));
  server.connect().command({"SCRIPT", "FLUSH"});
  Completions second(30);
  for (std::size_t i = 0; i < 30; ++i) limiter.async_try_acquire("key", 1, second.of(i));
  REQUIRE(runUntil(io, [&] { return second.completed == 30; }));
  CHECK(second.eachOnce());
  CHECK(second.admitted() == 30);
  swl::Connection blocking = server.connect();
  CHECK(swl::SlidingWindowLimiter<>(blocking, limiter.limit()).peek("key").used == 40);
}

TEST_CASE("the observer, shadow mode, the access list and throw_error apply on Asio as on every limiter") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  std::mutex mutex;
  std::vector<swl::Verdict> verdicts;
  swl::LimiterOptions options;
  options.observer = [&](const swl::DecisionEvent& event) {
    const std::lock_guard<std::mutex> lock(mutex);
    verdicts.push_back(event.verdict);
  };

  SECTION("shadow mode admits a refusal and marks it") {
    options.enforcement = swl::Enforcement::shadow;
    swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{1, 60s}, options);
    Completions completions(2);
    for (std::size_t i = 0; i < 2; ++i) limiter.async_try_acquire("key", 1, completions.of(i));
    REQUIRE(runUntil(io, [&] { return completions.completed == 2; }));
    CHECK(completions.decisions[1].allowed);
    CHECK(completions.decisions[1].shadow_rejected);
    CHECK(verdicts == std::vector<swl::Verdict>{swl::Verdict::allowed, swl::Verdict::shadow_rejected});
  }
  SECTION("the access list answers listed keys without Redis") {
    auto access = std::make_shared<swl::AccessList>();
    access->allow("vip");
    access->deny("abuser");
    options.access = access;
    swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{1, 60s}, options);
    Completions completions(3);
    limiter.async_try_acquire("vip", 1, completions.of(0));
    limiter.async_try_acquire("abuser", 1, completions.of(1));
    CHECK(completions.completed == 0);  // never inside the call that started it
    limiter.async_try_acquire("other", 1, completions.of(2));
    REQUIRE(runUntil(io, [&] { return completions.completed == 3; }));
    CHECK(completions.decisions[0].tier == swl::Tier::allow_list);
    CHECK(completions.decisions[1].tier == swl::Tier::deny_list);
    CHECK(completions.decisions[2].tier == swl::Tier::redis);
    CHECK(server.connect().command({"EXISTS", limiter.redisKey("vip")})->integer() == 0);
  }
  SECTION("throw_error gives the error's code when Redis cannot answer; deny refuses without one") {
    server.stop();
    options.on_failure = swl::FailurePolicy::throw_error;
    swl::AsioSlidingWindowLimiter<> throwing(redis, swl::Limit{1, 60s}, options);
    options.on_failure = swl::FailurePolicy::deny;
    swl::AsioSlidingWindowLimiter<> denying(redis, swl::Limit{1, 60s}, options);
    Completions completions(2);
    throwing.async_try_acquire("key", 1, completions.of(0));
    denying.async_try_acquire("key", 1, completions.of(1));
    REQUIRE(runUntil(io, [&] { return completions.completed == 2; }));
    CHECK(completions.errors[0] == swl::AsioErrc::connection);
    CHECK(completions.errors[0].category().name() == std::string("swl"));
    CHECK(!completions.errors[1]);
    CHECK(completions.decisions[1].tier == swl::Tier::fail_closed);
    CHECK(verdicts == std::vector<swl::Verdict>{swl::Verdict::error, swl::Verdict::rejected});
  }
}

TEST_CASE("an Asio limiter over a pool spreads its calls over every connection and still admits exactly the limit") {
  RedisServer server;
  swl::asio::io_context io;
  auto pool = swl::AsioConnectionPool::tcp(io.get_executor(), "127.0.0.1", server.port(), 4, patient());
  CHECK(pool.size() == 4);
  swl::AsioSlidingWindowLimiter<> limiter(pool, swl::Limit{250, 60s});
  const FromThreads outcome = decideFromThreads(io, limiter, 2, 4, 100);
  CHECK(outcome.completed == 400);
  CHECK(outcome.failed == 0);
  CHECK(outcome.admitted == 250);
  // The pool's four connections, and the one asking.
  const std::string clients(server.connect().command({"CLIENT", "LIST"})->text());
  CHECK(std::count(clients.begin(), clients.end(), '\n') == 5);
  CHECK_THROWS_AS(swl::AsioConnectionPool::tcp(std::vector<swl::asio::any_io_executor>{}, "127.0.0.1", 1),
                  swl::InvalidArgument);
}

TEST_CASE(
    "an Asio connection whose server answers nothing long past a call's deadline is dropped, and the next "
    "call connects again") {
  RedisServer server;
  swl::asio::io_context io;
  swl::ConnectionOptions options = patient();
  options.connect_timeout = 100ms;
  options.command_timeout = 100ms;  // abandoned 100 + 4 x 100 ms past a deadline
  auto redis = connect(io, server, options);
  swl::LimiterOptions deny;
  deny.on_failure = swl::FailurePolicy::deny;
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s}, deny);
  decideOne(io, limiter);  // connected, the script loaded
  // The ids of the clients connected to the server, but the one asking.
  const auto others = [&] {
    swl::Connection asking = server.connect();
    const std::string own = "id=" + std::to_string(asking.command({"CLIENT", "ID"})->integer()) + " ";
    const std::string list(asking.command({"CLIENT", "LIST"})->text());
    std::vector<std::string> ids;
    for (std::size_t at = list.find("id="); at != std::string::npos; at = list.find("\nid=", at + 1)) {
      const std::size_t start = list[at] == '\n' ? at + 1 : at;
      const std::string id = list.substr(start, list.find(' ', start) - start + 1);
      if (id != own) ids.push_back(id);
    }
    return ids;
  };
  const std::vector<std::string> before = others();
  REQUIRE(before.size() == 1);  // the limiter's connection

  server.pause();
  CHECK(decideOne(io, limiter).tier == swl::Tier::fail_closed);
  io.restart();
  io.run_for(1s);  // past 100 ms + 500 ms: the connection is given up (and with it all work: run_for returns)
  server.resume();

  // Its breaker opened for a cool-down of 0 (patient()): the next call connects again and decides.
  CHECK(decideOne(io, limiter).tier == swl::Tier::redis);
  std::vector<std::string> now = others();
  for (const auto until = Clock::now() + 5s; now.size() != 1 && Clock::now() < until; now = others()) {
    std::this_thread::sleep_for(10ms);  // the server sees the old connection's close once it runs again
  }
  REQUIRE(now.size() == 1);
  CHECK(now.front() != before.front());  // a new connection, not the old one
}

namespace {

// One strand's turns at `co_await (limiter.async_try_acquire(key) || timer.async_wait())`, written with
// the parallel group that operator is made of: a decision raced against a timer of 0 to 2 ms, the first to
// end cancelling the other, from the strand (the caller's executor) while the decision completes on the
// connection's. It takes turns until the tally has seen enough of both endings.
struct Racer : std::enable_shared_from_this<Racer> {
  struct Tally {
    std::atomic<int> decided{0}, cancelled{0}, raced{0}, done{0}, twice{0};
    bool enough() const { return (cancelled >= 200 && decided >= 50) || raced >= 20000; }
  };

  Racer(swl::asio::io_context& io, swl::AsioSlidingWindowLimiter<>& limiter, Tally& tally, unsigned seed)
      : strand(swl::asio::make_strand(io)), timer(strand), limiter(limiter), tally(tally), random(seed) {}

  void race() {
    if (tally.enough()) {
      ++tally.done;
      return;
    }
    ++tally.raced;
    // A third of the timers end at once, before the decision is sent; the rest around its round trip.
    const int wait_us = random() % 3 == 0 ? 0 : static_cast<int>(random() % 2000);
    timer.expires_after(std::chrono::microseconds(wait_us));
    auto ended = std::make_shared<std::atomic<int>>(0);
    swl::asio::experimental::make_parallel_group(limiter.async_try_acquire("shared"),
                                                 timer.async_wait(swl::asio_default_token()))
        .async_wait(swl::asio::experimental::wait_for_one(),
                    swl::asio::bind_executor(strand, [self = shared_from_this(), ended](
                                                         std::array<std::size_t, 2>, swl::asio_error_code error,
                                                         swl::Decision decision, swl::asio_error_code) {
                      if (++*ended > 1) ++self->tally.twice;
                      if (error == swl::asio::error::operation_aborted) {
                        ++self->tally.cancelled;
                      } else if (!error && decision.allowed) {
                        ++self->tally.decided;
                      }
                      self->race();
                    }));
  }

  swl::asio::strand<swl::asio::io_context::executor_type> strand;
  swl::asio::steady_timer timer;
  swl::AsioSlidingWindowLimiter<>& limiter;
  Tally& tally;
  std::minstd_rand random;
};

}  // namespace

TEST_CASE(
    "decisions cancelled by a racing timer on 8 strands of an io_context that 4 threads run each end once, and "
    "Redis counts no more than were sent") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{1000000, 60s});
  decideOne(io, limiter);  // connected, the script loaded

  Racer::Tally tally;
  auto work = swl::asio::make_work_guard(io);
  for (unsigned i = 0; i < 8; ++i) {
    auto racer = std::make_shared<Racer>(io, limiter, tally, i + 1);
    swl::asio::post(racer->strand, [racer] { racer->race(); });
  }
  std::vector<std::thread> running;
  for (int i = 0; i < 4; ++i) running.emplace_back([&] { io.run(); });
  const auto until = Clock::now() + 100s;
  while (tally.done < 8 && Clock::now() < until) std::this_thread::sleep_for(5ms);
  work.reset();
  io.stop();
  for (std::thread& runner : running) runner.join();

  INFO("raced " << tally.raced << ": decided " << tally.decided << ", cancelled " << tally.cancelled);
  REQUIRE(tally.done == 8);
  CHECK(tally.twice == 0);
  CHECK(tally.cancelled >= 200);
  CHECK(tally.decided >= 50);
  CHECK(tally.decided + tally.cancelled == tally.raced);
  // A cancelled call may have been sent (and counted); a decided one was.
  swl::Connection blocking = server.connect();
  const std::int64_t counted = swl::SlidingWindowLimiter<>(blocking, limiter.limit()).peek("shared").used;
  CHECK(counted >= tally.decided + 1);
  CHECK(counted <= tally.raced + 1);
}

TEST_CASE(
    "an io_context destroyed while calls await a stopped Redis destroys their handlers unrun and closes the "
    "connection, whichever threads ran it") {
  RedisServer server;
  const int threads = GENERATE(0, 4);
  auto token = std::make_shared<int>(0);  // each handler holds a copy: all are gone when it has expired
  const std::weak_ptr<int> handlers = token;
  std::atomic<int> ran{0};
  {
    swl::asio::io_context io;
    auto redis = connect(io, server);
    swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{100, 60s});
    decideOne(io, limiter);  // connected, the script loaded
    server.pause();
    auto work = swl::asio::make_work_guard(io);
    std::vector<std::thread> running;
    for (int i = 0; i < threads; ++i) running.emplace_back([&] { io.run(); });
    for (int i = 0; i < 20; ++i) limiter.async_try_acquire("key", [&ran, token](auto, auto) { ++ran; });
    limiter.async_try_acquire_many({{"a", 1}, {"b", 1}}, [&ran, token](auto, auto) { ++ran; });
    limiter.async_peek("key", [&ran, token](auto, auto) { ++ran; });
    limiter.async_reset("key", [&ran, token](auto, auto) { ++ran; });
    token.reset();
    if (threads == 0) {
      io.run_for(200ms);  // sent, unanswered
    } else {
      std::this_thread::sleep_for(200ms);
      work.reset();
      io.stop();
      for (std::thread& runner : running) runner.join();
    }
  }  // the limiter, the connection (its close is queued, and never runs), then the io_context
  CHECK(ran == 0);
  CHECK(handlers.expired());
  server.resume();
  // Once Redis runs again it sees the connection closed: only the client asking is left.
  swl::Connection asking = server.connect();
  const auto clients = [&] {
    const std::string list(asking.command({"CLIENT", "LIST"})->text());
    return std::count(list.begin(), list.end(), '\n');
  };
  for (const auto until = Clock::now() + 10s; clients() != 1 && Clock::now() < until;) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(clients() == 1);
}

TEST_CASE(
    "a closed connection stays a valid handle: its calls, and those of a limiter made over it afterwards, end "
    "with ConnectionError") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  swl::AsioSlidingWindowLimiter<> before(redis, swl::Limit{5, 60s});
  decideOne(io, before);
  redis.close();
  swl::AsioSlidingWindowLimiter<> after(redis, swl::Limit{5, 60s});
  CHECK(redis.endpoint() == "127.0.0.1:" + std::to_string(server.port()));
  CHECK(redis.get_executor() == redis.get_executor());

  Completions completions(2);
  before.async_try_acquire("key", completions.of(0));
  after.async_try_acquire("key", completions.of(1));
  swl::asio_error_code peek_error, reset_error;
  after.async_peek("key", [&](swl::asio_error_code error, swl::Usage) { peek_error = error; });
  after.async_reset("key", [&](swl::asio_error_code error, bool) { reset_error = error; });
  REQUIRE(runUntil(io, [&] { return completions.completed == 2 && peek_error && reset_error; }));
  CHECK(completions.errors[0] == swl::AsioErrc::connection);
  CHECK(completions.errors[1] == swl::AsioErrc::connection);
  CHECK(peek_error == swl::AsioErrc::connection);
  CHECK(reset_error == swl::AsioErrc::connection);

  // A handle moved from holds nothing, and says so.
  swl::AsioConnection moved = std::move(redis);
  CHECK_THROWS_AS(redis.endpoint(), swl::InvalidArgument);
  CHECK_THROWS_AS(swl::AsioSlidingWindowLimiter<>(redis, swl::Limit{5, 60s}), swl::InvalidArgument);
}

TEST_CASE("a batch copies its keys: the caller may free them once the call has started, and the observer sees them") {
  RedisServer server;
  swl::asio::io_context io;
  auto redis = connect(io, server);
  std::vector<std::string> observed;
  swl::LimiterOptions options;
  options.observer = [&](const swl::DecisionEvent& event) { observed.emplace_back(event.key); };
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{5, 60s}, options);
  std::vector<std::string> expected;
  bool completed = false;
  {
    // Longer than any short-string buffer: each key lives on the heap, where a read after free shows.
    auto keys = std::make_unique<std::vector<std::string>>();
    for (char name : std::string("abc")) keys->push_back(std::string(100, name));
    expected = *keys;
    std::vector<swl::AcquireRequest> requests;
    for (const std::string& key : *keys) requests.push_back({key, 1});
    requests.push_back({"", 1});  // refused before sending: its Outcome, not the batch
    limiter.async_try_acquire_many(std::move(requests), [&](swl::asio_error_code error, std::vector<swl::Outcome> all) {
      CHECK(!error);
      REQUIRE(all.size() == 4);
      for (std::size_t i = 0; i < 3; ++i) CHECK(all[i].decision.allowed);
      CHECK(!all[3].ok());
      completed = true;
    });
  }  // the keys are freed
  REQUIRE(runUntil(io, [&] { return completed; }));
  expected.push_back("");
  CHECK(observed == expected);
}
