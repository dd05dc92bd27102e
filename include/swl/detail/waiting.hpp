#pragma once
// acquire()'s loop, shared by every blocking limiter: ask, and while refused sleep the decision's
// retry_after and ask again; give up with the last refusal as soon as the next try would come after
// the deadline, so it never sleeps in vain.

#include <swl/limit.hpp>

#include <chrono>
#include <thread>

namespace swl::detail {

template <class TryAcquire>
Decision acquireUntil(TryAcquire&& try_acquire, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const Decision decision = try_acquire();
    if (decision.allowed || std::chrono::steady_clock::now() + decision.retry_after > deadline) return decision;
    std::this_thread::sleep_for(decision.retry_after);
  }
}

}  // namespace swl::detail
