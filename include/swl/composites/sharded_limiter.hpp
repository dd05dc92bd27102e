#pragma once
/// \file
/// ShardedLimiter: one hot key's limit spread over several Redis keys in different hash slots, so that
/// on Redis Cluster its load spreads over several masters (the seed articles' random-suffix sharding).
///
///   swl::ShardedLimiter<> limiter(cluster, swl::Limit{1000, std::chrono::seconds(1)}, {}, swl::Sharding(4));
///
/// Shard i is a limiter of its own over "prefix:{i:user_key}" (ShardKey) holding its share of the limit:
/// limit / shards, the remainder one each to the first shards, so the shares add up to the limit exactly.
/// Each request goes to one shard drawn at random, so the shards together never admit more than the
/// limit. They may admit less: a request can meet a full shard while another still has room. Under
/// overload every shard fills and the key gets its whole limit; when demand is near the limit, some
/// requests are turned away early (see docs/cluster-and-sentinel.md, "Hot keys"). Decision::remaining is
/// the shard's room times the number of shards, an estimate. Use it only for keys whose traffic one master
/// cannot carry; every other key is exact with a plain limiter.
///
/// It keeps the limiter contract (limiter.hpp): its shards are asked through decide(), and it applies the
/// observer and the failure policy once. Thread safety: as safe as its RedisClient.

#include <swl/algorithms/sliding_window_log.hpp>
#include <swl/composites/detail/sharded_core.hpp>
#include <swl/limiter.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>

namespace swl {

/// One key's limit split over shards, for a key one master cannot carry. Constructed as
/// `ShardedLimiter<>(RedisClient& redis, Limit limit, LimiterOptions options, Sharding sharding,
/// MemberPolicy members = {}, TtlPolicy ttl = {})`; the client must outlive it. Its calls are the contract's
/// (limiter.hpp).
template <class Algorithm = SlidingWindowLog, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using ShardedLimiter = LimiterFace<detail::ShardedLimiterCore<Algorithm, MemberPolicy, TtlPolicy>>;

}  // namespace swl
