#pragma once
/// \file
/// RedisLimiter: the engine behind every Redis limiter. It turns a request into one EVALSHA of its
/// algorithm's script and the script's answer into a Decision; the algorithm (swl/algorithms/) brings
/// only its Lua. Users name it through an algorithm's alias:
///
///   auto connection = swl::Connection::tcp("127.0.0.1", 6379);
///   swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// It keeps the limiter contract (limiter.hpp): tryAcquire is one EVALSHA, atomic on the server, so any
/// number of processes and threads sharing a Redis agree exactly; tryAcquireMany is one pipelined round
/// trip (per server). Thread safety: as safe as its RedisClient.

#include <swl/detail/limiter/redis_core.hpp>
#include <swl/limiter.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>

namespace swl {

/// A limiter deciding with `Algorithm`'s script on Redis, one EVALSHA per decision. Constructed as
/// `RedisLimiter<Algorithm>(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = {},
/// MemberPolicy members = {}, TtlPolicy ttl = {})`; the client must outlive it. Its calls are the contract's
/// (limiter.hpp).
template <class Algorithm, class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using RedisLimiter = LimiterFace<detail::RedisLimiterCore<Algorithm, KeyPolicy, MemberPolicy, TtlPolicy>>;

}  // namespace swl
