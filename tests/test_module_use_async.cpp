// The event loops' connections with the module (test_module_use.cpp has the blocking ones): they ask at
// connect, in the handshake's write, and send SWL.DECIDE once the server said it has it; a call the
// module cannot take goes again as the script. On libevent and on Asio.

#include <swl/asio/limiter.hpp>
#include <swl/async/limiter.hpp>
#include <swl/swl.hpp>

#include "support/log_traces.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <event2/event.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using swl::test::commandCalls;
using swl::test::errorReplies;
using swl::test::RedisServer;

namespace {

struct EventBaseDeleter {
  void operator()(event_base* loop) const noexcept { event_base_free(loop); }
};

// A libevent loop and an async limiter of `limit` on `server`, and what its calls answered.
class LibeventLimiter {
 public:
  LibeventLimiter(const RedisServer& server, swl::Limit limit)
      : loop_(event_base_new()),
        redis_(swl::AsyncConnection::tcp(loop_.get(), "127.0.0.1", server.port(), swl::test::patient())),
        limiter_(redis_, limit) {}

  // `count` decisions on `key`, sent at once; how many were admitted once all were answered.
  int admitted(const std::string& key, int count) {
    int admitted = 0, answered = 0;
    for (int i = 0; i < count; ++i) {
      limiter_.tryAcquire(key, [&](swl::Outcome outcome) {
        CHECK(outcome.ok());
        admitted += outcome.decision.allowed ? 1 : 0;
        ++answered;
      });
    }
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (answered < count && std::chrono::steady_clock::now() < until) {
      event_base_loop(loop_.get(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
    }
    REQUIRE(answered == count);
    return admitted;
  }

 private:
  std::unique_ptr<event_base, EventBaseDeleter> loop_;
  swl::AsyncConnection redis_;
  swl::AsyncSlidingWindowLimiter<> limiter_;
};

// The same on Asio.
class AsioLimiter {
 public:
  AsioLimiter(const RedisServer& server, swl::Limit limit)
      : redis_(swl::AsioConnection::tcp(io_.get_executor(), "127.0.0.1", server.port(), swl::test::patient())),
        limiter_(redis_, limit) {}

  int admitted(const std::string& key, int count) {
    int admitted = 0, answered = 0;
    for (int i = 0; i < count; ++i) {
      limiter_.async_try_acquire(key, 1, [&](swl::asio_error_code error, swl::Decision decision) {
        CHECK(!error);
        admitted += decision.allowed ? 1 : 0;
        ++answered;
      });
    }
    const auto until = std::chrono::steady_clock::now() + 20s;
    io_.restart();
    while (answered < count && std::chrono::steady_clock::now() < until) {
      io_.run_one_for(10ms);
      io_.restart();
    }
    REQUIRE(answered == count);
    return admitted;
  }

 private:
  swl::asio::io_context io_;
  swl::AsioConnection redis_;
  swl::AsioSlidingWindowLimiter<> limiter_;
};

template <class Limiter>
void decidesThroughTheModule() {
  const RedisServer server({"--loadmodule", swl::test::modulePath(), "--enable-module-command", "local"});
  swl::ConnectionOptions lua_only = swl::test::patient();
  lua_only.native_module = swl::NativeModule::never;
  swl::Connection observer = server.connect(lua_only);
  swl::test::textReply(observer, {"ZADD", "swl:old", "-1", "#", "1", "a*3"});  // swl 0.3's layout
  Limiter limiter(server, swl::Limit{5, 60s});

  // The first call may go out before the server has said it has the module: it goes as the script (and
  // again as the module's command, after NOSCRIPT, by when the answer is in).
  CHECK(limiter.admitted("user", 1) == 1);
  const long long scripted = commandCalls(observer, "evalsha");
  const long long native = commandCalls(observer, "swl.decide");
  CHECK(limiter.admitted("user", 20) == 4);
  CHECK(commandCalls(observer, "swl.decide") == native + 20);
  CHECK(commandCalls(observer, "evalsha") == scripted);

  // LAYOUT: the script renumbers the set, once; the module decides it from then on.
  CHECK(limiter.admitted("old", 1) == 1);
  CHECK(errorReplies(observer, "LAYOUT") == 1);
  CHECK(limiter.admitted("old", 3) == 3);
  CHECK(errorReplies(observer, "LAYOUT") == 1);
  CHECK(commandCalls(observer, "swl.decide") == native + 24);

  // A server that unloads the module: the calls in flight go again as the script, and the later ones go so.
  CHECK(swl::test::textReply(observer, {"MODULE", "UNLOAD", "swl"}) == "OK");
  CHECK(limiter.admitted("fresh", 8) == 5);
  const long long unknown = errorReplies(observer, "ERR");
  CHECK(unknown >= 1);
  CHECK(limiter.admitted("fresh", 2) == 0);
  CHECK(errorReplies(observer, "ERR") == unknown);
}

}  // namespace

TEST_CASE("an async connection on libevent sends SWL.DECIDE once the server said it has the module") {
  decidesThroughTheModule<LibeventLimiter>();
}

TEST_CASE("an Asio connection sends SWL.DECIDE once the server said it has the module") {
  decidesThroughTheModule<AsioLimiter>();
}
