// Calls in flight when the handles of their limiter and connection go (docs/asio.md, "Closing and shutting
// down"), for each order the handles can go in: each call ends exactly once, with its failure policy's
// answer, through a callback, a future or a coroutine, on a frozen Redis and on a live one, while four
// threads run the io_context; no handler outlives the test's own objects, and the connection's state is
// freed once its calls have ended. C++20 for the coroutines (swl itself stays C++17); built on standalone
// Asio where it awaits coroutines with this compiler, and again on Boost.Asio (test_boost_asio_closing.cpp).
#include <swl/asio/limiter.hpp>
#include <swl/swl.hpp>

#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#ifdef SWL_USE_BOOST_ASIO
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#else
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#endif

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using swl::test::RedisServer;

namespace {

using Clock = std::chrono::steady_clock;

// Which handles go while the calls are in flight, and in what order.
enum class Goes {
  limiter_first,     // the limiter; the connection stays until the calls have ended
  connection_first,  // the connection; the limiter stays, and starts one more call
  both,              // the limiter, then the connection, at once
  pool,              // a limiter over a pool of two connections, then the pool
};
enum class Completion { callback, future, coroutine };
enum class Server { frozen, live };

constexpr int kCalls = 5;
// Each call's own deadline (AcquireOptions::timeout). On a frozen Redis every call meets it; the harness's
// connections themselves are patient.
constexpr auto kCallTimeout = 500ms;

// Why a call was not decided by Redis, as the observer saw it.
enum class Failure { none, closed, timed_out, other };

// How each call ended, by call: a second end shows as a count of 2.
struct Ends {
  std::mutex mutex;
  std::vector<int> counts = std::vector<int>(kCalls + 1, 0);
  std::vector<swl::asio_error_code> errors = std::vector<swl::asio_error_code>(kCalls + 1);
  std::vector<swl::Decision> decisions = std::vector<swl::Decision>(kCalls + 1);
  std::vector<Clock::time_point> started = std::vector<Clock::time_point>(kCalls + 1);
  std::vector<Clock::time_point> ended = std::vector<Clock::time_point>(kCalls + 1);
  std::vector<Failure> failures = std::vector<Failure>(kCalls + 1, Failure::none);
  std::atomic<int> initiated{0};

  void end(std::size_t call, swl::asio_error_code error, swl::Decision decision) {
    const std::lock_guard<std::mutex> lock(mutex);
    errors[call] = error;
    decisions[call] = decision;
    ended[call] = Clock::now();
    ++counts[call];
  }
  void observe(const swl::DecisionEvent& event) {
    if (event.error == nullptr) return;
    const std::size_t call = std::stoul(std::string(event.key.substr(1)));
    Failure failure = Failure::other;
    if (dynamic_cast<const swl::TimeoutError*>(event.error) != nullptr) {
      failure = Failure::timed_out;
    } else if (dynamic_cast<const swl::ConnectionError*>(event.error) != nullptr) {
      failure = Failure::closed;
    }
    const std::lock_guard<std::mutex> lock(mutex);
    failures[call] = failure;
  }
  int endedCalls(std::size_t calls) {
    const std::lock_guard<std::mutex> lock(mutex);
    int ended_calls = 0;
    for (std::size_t call = 0; call < calls; ++call) ended_calls += counts[call] > 0 ? 1 : 0;
    return ended_calls;
  }
};

// The answer `policy` gives for a call Redis did not decide: a decision of the fail-open or fail-closed
// tier, or under throw_error the error code of the failure's kind.
void checkPolicyAnswer(swl::FailurePolicy policy, Failure failure, const swl::asio_error_code& error,
                       const swl::Decision& decision) {
  switch (policy) {
    case swl::FailurePolicy::allow:
      CHECK(!error);
      CHECK(decision.allowed);
      CHECK(decision.tier == swl::Tier::fail_open);
      break;
    case swl::FailurePolicy::deny:
      CHECK(!error);
      CHECK(!decision.allowed);
      CHECK(decision.tier == swl::Tier::fail_closed);
      break;
    case swl::FailurePolicy::throw_error:
      CHECK(error == (failure == Failure::timed_out ? swl::AsioErrc::timeout : swl::AsioErrc::connection));
      CHECK(!decision.allowed);
      break;
  }
}

// An io_context that four threads run until stop(), or until it goes (a failed REQUIRE included).
struct ThreadsRunning {
  ThreadsRunning() {
    for (int i = 0; i < 4; ++i) threads.emplace_back([this] { io.run(); });
  }
  ~ThreadsRunning() { stop(); }
  void stop() {
    work.reset();
    io.stop();
    for (std::thread& thread : threads) {
      if (thread.joinable()) thread.join();
    }
  }
  swl::asio::io_context io;
  swl::asio::executor_work_guard<swl::asio::io_context::executor_type> work = swl::asio::make_work_guard(io);
  std::vector<std::thread> threads;
};

const char* nameOf(Completion completion) {
  switch (completion) {
    case Completion::callback:
      return "a callback";
    case Completion::future:
      return "a future";
    case Completion::coroutine:
      return "a coroutine";
  }
  return "";
}

const char* nameOf(swl::FailurePolicy policy) {
  switch (policy) {
    case swl::FailurePolicy::allow:
      return "allow";
    case swl::FailurePolicy::deny:
      return "deny";
    case swl::FailurePolicy::throw_error:
      return "throw_error";
  }
  return "";
}

const char* nameOf(Goes goes) {
  switch (goes) {
    case Goes::limiter_first:
      return "the limiter first";
    case Goes::connection_first:
      return "the connection first";
    case Goes::both:
      return "both";
    case Goes::pool:
      return "a pool";
  }
  return "";
}

// One scenario: the handles made, the calls started, the handles gone as `goes` says, and every call's
// end checked.
void closeWithCallsInFlight(Goes goes, Completion completion, Server server_state, swl::FailurePolicy policy) {
  INFO("handles going: " << nameOf(goes) << "; completion: " << nameOf(completion) << "; Redis "
                         << (server_state == Server::frozen ? "frozen" : "live")
                         << "; failure policy: " << nameOf(policy));
  RedisServer server;
  auto ends = std::make_shared<Ends>();
  auto token = std::make_shared<int>(0);  // every handler holds a copy: all are gone once it has expired
  const std::weak_ptr<int> handlers = token;
  std::vector<std::weak_ptr<swl::detail::AsioSession>> sessions;
  // A future holds the handler's arguments, not an exception: a future's exception is freed by whichever
  // thread lets go of it last, through libstdc++'s reference count, which TSan does not see (the throwing
  // form is test_asio_limiter.cpp's).
  using Arguments = std::pair<swl::asio_error_code, swl::Decision>;
  std::vector<std::future<Arguments>> futures;

  ThreadsRunning running;
  swl::asio::io_context& io = running.io;

  swl::LimiterOptions options;
  options.on_failure = policy;
  options.observer = [ends](const swl::DecisionEvent& event) { ends->observe(event); };
  std::optional<swl::AsioConnection> connection;
  std::optional<swl::AsioConnectionPool> pool;
  std::optional<swl::AsioSlidingWindowLimiter<>> limiter;
  if (goes == Goes::pool) {
    pool.emplace(swl::AsioConnectionPool::tcp(io.get_executor(), "127.0.0.1", server.port(), 2, swl::test::patient()));
    for (const swl::AsioConnection& each : pool->connections()) sessions.push_back(each.session());
    limiter.emplace(*pool, swl::Limit{100, 60s}, options);
  } else {
    connection.emplace(swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", server.port(), swl::test::patient()));
    sessions.push_back(connection->session());
    limiter.emplace(*connection, swl::Limit{100, 60s}, options);
  }
  // Each connection up and the script loaded, so that on a frozen Redis the calls are sent and wait.
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    REQUIRE(limiter->async_try_acquire("warm", swl::asio::use_future).wait_for(20s) == std::future_status::ready);
  }
  if (server_state == Server::frozen) server.pause();

  swl::AcquireOptions call;
  call.timeout = kCallTimeout;
  // Call `index`, started on this thread (a coroutine's on one of the io_context's).
  auto start = [&](std::size_t index) {
    const std::string key = "k" + std::to_string(index);
    ends->started[index] = Clock::now();
    switch (completion) {
      case Completion::callback:
        limiter->async_try_acquire(key, call, [ends, token, index](swl::asio_error_code error, swl::Decision decision) {
          ends->end(index, error, decision);
        });
        ++ends->initiated;
        break;
      case Completion::future:
        futures.push_back(limiter->async_try_acquire(
            key, call, swl::asio::use_future([](swl::asio_error_code error, swl::Decision decision) {
              return Arguments{error, decision};
            })));
        ++ends->initiated;
        break;
      case Completion::coroutine: {
        // The operation is made (the key copied, the call laid out) before the coroutine runs; awaiting it
        // sends it, whatever has become of the limiter by then.
        auto operation = limiter->async_try_acquire(key, call, swl::asio::use_awaitable);
        swl::asio::co_spawn(
            io,
            [ends, token, index, operation = std::move(operation)]() mutable -> swl::asio::awaitable<void> {
              ++ends->initiated;
              try {
                const swl::Decision decision = co_await std::move(operation);
                ends->end(index, {}, decision);
              } catch (const swl::asio_system_error& error) {
                ends->end(index, error.code(), swl::Decision{});
              }
            },
            swl::asio::detached);
        break;
      }
    }
  };
  for (std::size_t i = 0; i < kCalls; ++i) start(i);
  for (const auto until = Clock::now() + 20s; ends->initiated < kCalls && Clock::now() < until;) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(ends->initiated == kCalls);
  if (server_state == Server::frozen) std::this_thread::sleep_for(100ms);  // sent, and unanswered

  std::size_t calls = kCalls;
  switch (goes) {
    case Goes::limiter_first:
      limiter.reset();
      break;
    case Goes::connection_first:
      connection.reset();
      start(kCalls);  // on a connection that is gone
      ++calls;
      break;
    case Goes::both:
      limiter.reset();
      connection.reset();
      break;
    case Goes::pool:
      limiter.reset();
      pool.reset();
      break;
  }
  token.reset();

  // Every call ends: the futures are read here, on this thread. (A future's end is known only to be before
  // its read: a refusal's wait for the deadline is checked here, where no reply can end it earlier.)
  if (completion == Completion::future && policy == swl::FailurePolicy::deny && server_state == Server::frozen) {
    std::this_thread::sleep_until(ends->started[0] + kCallTimeout - 10ms);  // before any call's deadline
    for (std::size_t i = 0; i < kCalls; ++i) CHECK(futures[i].wait_for(0s) == std::future_status::timeout);
  }
  for (std::size_t i = 0; i < futures.size(); ++i) {
    REQUIRE(futures[i].wait_for(20s) == std::future_status::ready);
    const Arguments ended = futures[i].get();
    ends->end(i, ended.first, ended.second);
  }
  for (const auto until = Clock::now() + 20s;
       ends->endedCalls(calls) < static_cast<int>(calls) && Clock::now() < until;) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(ends->endedCalls(calls) == static_cast<int>(calls));
  // What is left of the limiter and the connection goes; then the state behind the connections is freed.
  limiter.reset();
  connection.reset();
  pool.reset();
  const auto freed = [&] {
    for (const auto& session : sessions) {
      if (!session.expired()) return false;
    }
    return true;
  };
  for (const auto until = Clock::now() + 20s; !(freed() && handlers.expired()) && Clock::now() < until;) {
    std::this_thread::sleep_for(1ms);
  }
  running.stop();
  CHECK(freed());
  CHECK(handlers.expired());

  const std::lock_guard<std::mutex> lock(ends->mutex);
  for (std::size_t i = 0; i < calls; ++i) {
    INFO("call " << i);
    CHECK(ends->counts[i] == 1);
    const Failure failure = ends->failures[i];
    if (server_state == Server::live && failure == Failure::none) {
      CHECK(!ends->errors[i]);  // Redis decided it
      CHECK(ends->decisions[i].tier == swl::Tier::redis);
      continue;
    }
    if (server_state == Server::frozen) {
      // The connection alive, a call ends at its deadline; closed, with the close.
      CHECK(failure == (goes == Goes::limiter_first ? Failure::timed_out : Failure::closed));
    } else {
      CHECK((failure == Failure::closed || failure == Failure::timed_out));
    }
    checkPolicyAnswer(policy, failure, ends->errors[i], ends->decisions[i]);
    // A refusal for a call Redis may still run waits for that call's deadline: past it, Redis records
    // nothing. (The call started after the connection went was never sent.)
    if (policy == swl::FailurePolicy::deny && completion != Completion::future && i < kCalls) {
      CHECK(ends->ended[i] - ends->started[i] >= kCallTimeout);
    }
  }
}

void everyCompletionServerAndPolicy(Goes goes) {
  for (const Completion completion : {Completion::callback, Completion::future, Completion::coroutine}) {
    for (const Server server : {Server::frozen, Server::live}) {
      for (const swl::FailurePolicy policy :
           {swl::FailurePolicy::deny, swl::FailurePolicy::allow, swl::FailurePolicy::throw_error}) {
        closeWithCallsInFlight(goes, completion, server, policy);
      }
    }
  }
}

}  // namespace

// The cases' names; test_boost_asio_closing.cpp's say which Asio they run on.
#ifdef SWL_USE_BOOST_ASIO
constexpr const char* kLimiterFirst =
    "on Boost.Asio, a limiter destroyed with calls in flight leaves them to its connection";
constexpr const char* kConnectionFirst =
    "on Boost.Asio, a connection destroyed with calls in flight ends each once with the failure policy's answer";
constexpr const char* kBoth =
    "on Boost.Asio, a limiter and its connection destroyed with calls in flight end each once";
constexpr const char* kPool = "on Boost.Asio, a limiter and its pool destroyed with calls in flight end each once";
#else
constexpr const char* kLimiterFirst =
    "a limiter destroyed with calls in flight leaves them to its connection: each ends once, by Redis or at its "
    "deadline";
constexpr const char* kConnectionFirst =
    "a connection destroyed with calls in flight ends each once with the failure policy's answer, and the limiter's "
    "later calls too";
constexpr const char* kBoth =
    "a limiter and its connection destroyed with calls in flight end each once with the failure policy's answer, and "
    "free the connection";
constexpr const char* kPool =
    "a limiter and its pool destroyed with calls in flight end each once with the failure policy's answer, and free "
    "every connection";
#endif

TEST_CASE(kLimiterFirst) { everyCompletionServerAndPolicy(Goes::limiter_first); }
TEST_CASE(kConnectionFirst) { everyCompletionServerAndPolicy(Goes::connection_first); }
TEST_CASE(kBoth) { everyCompletionServerAndPolicy(Goes::both); }
TEST_CASE(kPool) { everyCompletionServerAndPolicy(Goes::pool); }
