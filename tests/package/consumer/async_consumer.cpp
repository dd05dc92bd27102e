// A user's event-loop program: it compiles against swl::async and links libevent through it.
#include <swl/async/limiter.hpp>

#include <event2/event.h>

#include <iostream>

int main() {
  event_base* loop = event_base_new();
  int status = 1;
  {
    auto redis = swl::AsyncConnection::tcp(loop, "127.0.0.1", 1);  // nothing listens on port 1
    swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{5, std::chrono::seconds(1)});
    limiter.tryAcquire("k", [&](swl::Outcome outcome) {
      std::cout << "async consumer ok: " << (outcome.ok() ? "decided" : "failed as expected") << "\n";
      status = outcome.ok() ? 1 : 0;
      event_base_loopbreak(loop);
    });
    event_base_dispatch(loop);
  }
  event_base_free(loop);
  return status;
}
