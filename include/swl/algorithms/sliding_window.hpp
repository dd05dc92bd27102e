#pragma once
/// \file
/// SlidingWindowLimiter: an exact sliding window log on one Redis key per limited key.
///
///   auto connection = swl::Connection::tcp("127.0.0.1", 6379);
///   swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// Everything around the log's script (SlidingWindowLog, algorithms/sliding_window_log.hpp) is
/// RedisLimiter's, but what only a log can do: reserve() and settle() for costs known only afterwards,
/// and the leases LeasingLimiter is built on (algorithms/detail/sliding_window_log/limiter_core.hpp).

#include <swl/algorithms/detail/sliding_window_log/limiter_core.hpp>
#include <swl/limiter.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>

namespace swl {

/// An exact sliding window log on one Redis key per limited key: swl's main limiter. Constructed as
/// `SlidingWindowLimiter<>(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = {},
/// MemberPolicy members = {}, TtlPolicy ttl = {})`; the client must outlive it. Beside the contract's calls
/// (limiter.hpp) it has reserve(), settle(), lease() and giveBack().
template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using SlidingWindowLimiter = LimiterFace<detail::SlidingWindowLimiterCore<KeyPolicy, MemberPolicy, TtlPolicy>>;

}  // namespace swl
