#pragma once
/// \file
/// LocalLimiter: the sliding window log kept in this process's memory, no Redis at all. The same
/// decisions as SlidingWindowLimiter, to the microsecond, for one process: the embedded default when
/// there is a single instance, a stand-in in users' own unit tests, and the tier that decides while
/// Redis cannot (TieredLimiter's insurance).
///
///   swl::LocalLimiter limiter(swl::Limit{100, std::chrono::seconds(10)});
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// Thread-safe: keys are spread over independently locked shards. Memory is bounded: a key holds at most
/// one entry per admitted request still in its window (rejected requests record nothing), keys whose
/// window has emptied are dropped as others come and go, and at most `max_keys` keys are held: past that,
/// the least recently used key is forgotten (counted in evictions(); its next request meets an empty
/// window). So memory stays below about max_keys x (limit x 16 + 120) bytes.

#include <swl/detail/limiter/local_core.hpp>
#include <swl/limiter.hpp>

namespace swl {

/// The sliding window log in this process's memory. Constructed as
/// `LocalLimiter(Limit limit, LocalLimiterOptions options = {})`. Its calls are the contract's (limiter.hpp).
using LocalLimiter = LimiterFace<detail::LocalLimiterCore>;

}  // namespace swl
