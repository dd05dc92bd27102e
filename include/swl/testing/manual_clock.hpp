#pragma once
/// \file
/// A clock tests move by hand, for deterministic tests of code that limits: hand it to a limiter with
/// Clock::manual and advance it between calls. Not a clock for production: nothing moves it but the test.

#include <swl/options.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

/// What tests of code that limits need, and production never does.
namespace swl::testing {

/// Copies share one time, so a test keeps a copy and advances it while the limiter reads it.
class ManualClock {
 public:
  /// A clock that reads `start` (microseconds since the epoch; a recent date by default) until moved.
  explicit ManualClock(std::chrono::microseconds start = std::chrono::seconds(1'700'000'000))
      : now_(std::make_shared<std::atomic<std::int64_t>>(start.count())) {}

  /// The time it reads now, in microseconds since the epoch.
  std::chrono::microseconds now() const noexcept { return std::chrono::microseconds(now_->load()); }
  /// Sets the time, forward or back (a stepped host clock).
  void set(std::chrono::microseconds now) noexcept { now_->store(now.count()); }
  /// Moves the time on by `by`.
  void advance(std::chrono::microseconds by) noexcept { now_->fetch_add(by.count()); }

 private:
  std::shared_ptr<std::atomic<std::int64_t>> now_;
};

}  // namespace swl::testing

namespace swl {

inline Clock Clock::manual(testing::ManualClock clock) {
  return Clock([clock = std::move(clock)] { return clock.now(); });
}

}  // namespace swl
