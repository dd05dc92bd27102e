#pragma once
// Refusal: Redis's refusal of a key, kept to be repeated in memory. Nothing can shorten the wait it
// named on the server (new entries only lengthen it), so until then a request of the same or a larger
// cost gets the answer Redis would give, without a round trip. The refusal caches of TieredLimiter and
// LeasingLimiter keep one per key.

#include <swl/decision.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace swl::detail {

struct Refusal {
  std::int64_t cost = 0;
  std::int64_t remaining = 0;
  std::int64_t retry_at = 0;  // microseconds on the owner's local clock
  std::int64_t reset_at = 0;

  // `refused` answered a request of `cost` asked at `asked_at`, read before the call went out: the
  // local wait then ends no later than Redis's, so nothing Redis would admit is refused here.
  static Refusal of(std::int64_t cost, const Decision& refused, std::int64_t asked_at) {
    return {cost, refused.remaining, asked_at + refused.retry_after.count(), asked_at + refused.reset_after.count()};
  }

  bool stillRefuses(std::int64_t asked_cost, std::int64_t now) const noexcept {
    return now < retry_at && asked_cost >= cost;  // a smaller request may fit where that one did not
  }

  Decision repeated(std::int64_t limit, std::int64_t now) const {
    Decision decision;
    decision.limit = limit;
    decision.remaining = remaining;
    decision.retry_after = std::chrono::microseconds(retry_at - now);
    decision.reset_after = std::chrono::microseconds(std::max(reset_at, retry_at) - now);
    decision.tier = Tier::blocked_cache;
    return decision;
  }
};

}  // namespace swl::detail
