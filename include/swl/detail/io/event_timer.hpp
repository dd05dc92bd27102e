#pragma once
// Runs a task on a libevent loop after a delay: what the async limiter's acquire sleeps with.

#include <event2/event.h>

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

namespace swl::detail {

// The task runs once, on the loop. libevent owns the pending timer; the task is handed to it as a raw
// pointer and taken back into a unique_ptr when it fires; false (and the task dropped) if libevent
// cannot arm the timer. A loop freed before the timer fires drops the task
// unrun (and its memory with it is lost, as libevent offers no hook to free it).
inline bool runAfter(event_base* loop, std::chrono::microseconds delay, std::function<void()> task) {
  auto owned = std::make_unique<std::function<void()>>(std::move(task));
  timeval after{};
  after.tv_sec = static_cast<decltype(after.tv_sec)>(delay.count() / 1'000'000);
  after.tv_usec = static_cast<decltype(after.tv_usec)>(delay.count() % 1'000'000);
  const auto fire = [](evutil_socket_t, short, void* pending) {
    const std::unique_ptr<std::function<void()>> task(static_cast<std::function<void()>*>(pending));
    (*task)();
  };
  if (event_base_once(loop, -1, EV_TIMEOUT, fire, owned.get(), &after) != 0) return false;
  owned.release();
  return true;
}

}  // namespace swl::detail
