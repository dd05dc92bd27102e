#pragma once
/// \file
/// TieredLimiter: a Redis limiter with two local tiers in front of and behind it.
///
///   swl::TierOptions tiers;
///   tiers.instances = 4;  // this service runs 4 instances: each may admit a quarter of the limit alone
///   swl::TieredLimiter<> limiter(pool, swl::Limit{100, std::chrono::seconds(10)}, {}, tiers);
///
/// In front, a cache of refusals: once Redis refuses a key with "retry after t", the same or a larger
/// cost for that key is refused here until t, without a round trip. Nothing can shorten that wait on
/// the server (new entries only lengthen it), so the answer is the one Redis would give; a flood from
/// one abuser then costs Redis one call per retry_after instead of one per request. The cache is off
/// when rejected requests are counted, since Redis would record each of them.
///
/// Behind, insurance: while Redis cannot answer (down, frozen, out of memory), each instance decides
/// alone with an exact in-memory window (LocalLimiter) and its share of the limit, limit / instances,
/// so the service as a whole stays within the limit. Redis is asked again every redis_retry_interval
/// (by one call; the others stay insured meanwhile, so a frozen Redis costs one timeout per interval,
/// not one per request). Once it answers, it decides again. What instances admitted alone is not
/// copied into Redis: in the first window after an outage a key may see up to limit + its insured
/// admissions. Without insurance (instances = 0) the failure policy answers, as for any limiter.
///
/// Decision::tier says which tier decided: redis, blocked_cache, insurance, fail_open or fail_closed. It
/// keeps the limiter contract (limiter.hpp) and applies the observer and the failure policy itself; the
/// Redis limiter inside is asked through decide(), so nothing is reported twice.
/// Thread-safe when its RedisClient is (a ConnectionPool, a ClusterConnection, a SentinelConnection).

#include <swl/algorithms/sliding_window.hpp>
#include <swl/composites/detail/tiered_core.hpp>
#include <swl/limiter.hpp>

namespace swl {

/// A Redis limiter with local tiers: a refusal cache in front, insurance behind. Constructed as
/// `TieredLimiter<>(RedisClient& redis, Limit limit, LimiterOptions options = {}, TierOptions tiers = {},
/// policies...)`, the policies those of `RedisTier`; the client must outlive it. Its calls are the contract's
/// (limiter.hpp).
template <class RedisTier = SlidingWindowLimiter<>>
using TieredLimiter = LimiterFace<detail::TieredLimiterCore<RedisTier>>;

}  // namespace swl
