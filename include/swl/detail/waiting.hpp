#pragma once
// acquire()'s loop, shared by every blocking limiter: ask, and while refused sleep the decision's
// retry_after and ask again; give up with the last refusal as soon as the next try would come after
// the deadline, so it never sleeps in vain.

#include <swl/limit.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>
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

// acquire(key, cost, deadline | timeout) for every limiter with a tryAcquire(key, cost): a base class
// that reaches its Limiter's tryAcquire (the curiously recurring template pattern).
//
// Client-side throttling for API clients and crawlers: tries, and while refused sleeps the decision's
// retry_after and tries again. Returns the admitting decision, or the last refusal as soon as its
// retry_after would end after `deadline`. A failure policy that denies is waited out the same way;
// FailurePolicy::throw_error throws as tryAcquire does.
template <class Limiter>
class Waiting {
 public:
  Decision acquire(std::string_view key, std::int64_t cost, std::chrono::steady_clock::time_point deadline) {
    return acquireUntil([&] { return static_cast<Limiter&>(*this).tryAcquire(key, cost); }, deadline);
  }

  template <class Rep, class Period>
  Decision acquire(std::string_view key, std::int64_t cost, std::chrono::duration<Rep, Period> timeout) {
    return acquire(key, cost, std::chrono::steady_clock::now() + timeout);
  }

 protected:
  Waiting() = default;
  ~Waiting() = default;
};

}  // namespace swl::detail
