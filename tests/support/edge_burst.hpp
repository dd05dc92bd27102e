#pragma once
// The edge-burst test, shared by the tests and bench/algorithms: the whole limit asked for just before
// a window boundary, then a request every window/(2 x limit) for two windows, on a manual clock. The
// answer is the most admissions any window-long interval saw; an exact limiter's is the limit.

#include <swl/testing/manual_clock.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace swl::test {

template <class Limiter>
std::int64_t worstWindowInEdgeBurst(Limiter& limiter, testing::ManualClock& clock, const std::string& key) {
  const std::chrono::microseconds window = limiter.limit().window;
  const std::int64_t limit = limiter.limit().max_requests;
  // Just before a multiple of the window, where fixed windows and buckets turn over.
  const std::int64_t boundary = (clock.now().count() / window.count() + 1) * window.count();
  clock.set(std::chrono::microseconds(boundary) - window / 100);

  std::vector<std::int64_t> admitted_at;
  for (std::int64_t i = 0; i < limit; ++i) {
    if (limiter.tryAcquire(key).allowed) admitted_at.push_back(clock.now().count());
  }
  const auto step = std::max<std::chrono::microseconds>(window / (2 * limit), std::chrono::microseconds(1));
  for (auto waited = std::chrono::microseconds(0); waited < 2 * window; waited += step) {
    clock.advance(step);
    if (limiter.tryAcquire(key).allowed) admitted_at.push_back(clock.now().count());
  }

  // Admissions in (t - window, t] for every admission time t.
  std::int64_t worst = 0;
  std::size_t oldest = 0;
  for (std::size_t newest = 0; newest < admitted_at.size(); ++newest) {
    while (admitted_at[oldest] <= admitted_at[newest] - window.count()) ++oldest;
    worst = std::max<std::int64_t>(worst, static_cast<std::int64_t>(newest - oldest + 1));
  }
  return worst;
}

}  // namespace swl::test
