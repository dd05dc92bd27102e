#pragma once
// A clock tests move by hand, for deterministic tests of code that limits: hand it to a limiter with
// Clock::manual and advance it between calls. Not a clock for production: nothing moves it but the test.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace swl::testing {

// Copies share one time, so a test keeps a copy and advances it while the limiter reads it.
class ManualClock {
 public:
  explicit ManualClock(std::chrono::microseconds start = std::chrono::seconds(1'700'000'000))
      : now_(std::make_shared<std::atomic<std::int64_t>>(start.count())) {}

  std::chrono::microseconds now() const noexcept { return std::chrono::microseconds(now_->load()); }
  void set(std::chrono::microseconds now) noexcept { now_->store(now.count()); }
  void advance(std::chrono::microseconds by) noexcept { now_->fetch_add(by.count()); }

 private:
  std::shared_ptr<std::atomic<std::int64_t>> now_;
};

}  // namespace swl::testing
