#pragma once
// Refusal: Redis's refusal of a key, kept to be repeated in memory. Nothing can shorten the wait it
// named on the server (new entries only lengthen it), so until then a request of the same or a larger
// cost under the same limit gets the answer Redis would give, without a round trip. The refusal caches of TieredLimiter
// and LeasingLimiter keep one per key.

#include <swl/decision.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace swl::detail {

struct Refusal {
  Limit limit;  // what it was decided under: a call under another limit (a raised plan) asks again
  std::int64_t cost = 0;
  std::int64_t remaining = 0;
  std::int64_t retry_at = 0;  // microseconds on the owner's local clock
  std::int64_t reset_at = 0;

  // `refused` answered a request of `cost` asked at `asked_at`, read before the call went out: the
  // local wait then ends no later than Redis's, so nothing Redis would admit is refused here.
  static Refusal of(const Limit& limit, std::int64_t cost, const Decision& refused, std::int64_t asked_at) {
    return {limit, cost, refused.remaining, asked_at + refused.retry_after.count(),
            asked_at + refused.reset_after.count()};
  }

  bool stillRefuses(const Limit& asked_limit, std::int64_t asked_cost, std::int64_t now) const noexcept {
    // A smaller request may fit where that one did not.
    return now < retry_at && asked_cost >= cost && asked_limit == limit;
  }

  Decision repeated(std::int64_t now) const {
    Decision decision;
    decision.limit = limit.max_requests;
    decision.remaining = remaining;
    decision.retry_after = std::chrono::microseconds(retry_at - now);
    decision.reset_after = std::chrono::microseconds(std::max(reset_at, retry_at) - now);
    decision.tier = Tier::blocked_cache;
    return decision;
  }
};

}  // namespace swl::detail
