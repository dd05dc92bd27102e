#pragma once
// The plain values of the API: what a limiter enforces (Limit), what a caller asks for (AcquireRequest),
// what it answered (Decision) and what a key has used (Usage).

#include <chrono>
#include <cstdint>
#include <string_view>

namespace swl {

// "max_requests per window". The window is kept in microseconds, so any std::chrono duration of
// microsecond resolution or coarser converts implicitly and exactly; a finer one does not compile.
struct Limit {
  std::int64_t max_requests = 0;
  std::chrono::microseconds window{0};
};

// One request of a batch (tryAcquireMany): `cost` units for `key`. The key is viewed, not copied.
struct AcquireRequest {
  std::string_view key;
  std::int64_t cost = 1;
};

// Who produced a Decision: Redis, or the failure policy because Redis could not answer.
enum class DecisionSource { redis, fail_open, fail_closed };

struct Decision {
  bool allowed = false;
  std::int64_t limit = 0;
  // What the window still admits after this decision.
  std::int64_t remaining = 0;
  // Zero when admitted; otherwise the exact time until enough entries leave the window for the same
  // cost. A caller that waits this long and retries is admitted unless others took the room first.
  // For an HTTP Retry-After header round it up: std::chrono::ceil<std::chrono::seconds>(retry_after).
  std::chrono::microseconds retry_after{0};
  // Time until the window holds no entry for this key at all.
  std::chrono::microseconds reset_after{0};
  DecisionSource source = DecisionSource::redis;

  explicit operator bool() const noexcept { return allowed; }
};

// What a key has used of its limit, read without consuming anything (peek).
struct Usage {
  std::int64_t limit = 0;
  // Units in the current window (for the approximate algorithms, their estimate rounded up).
  std::int64_t used = 0;
  std::int64_t remaining = 0;
  // Time until the window holds nothing for this key.
  std::chrono::microseconds reset_after{0};
};

}  // namespace swl
