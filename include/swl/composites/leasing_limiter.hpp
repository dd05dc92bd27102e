#pragma once
/// \file
/// LeasingLimiter: the exact sliding window log, with hot keys decided in this process at memory speed
/// from units leased out of the shared window, never admitting more than the limit in any window.
///
///   swl::ConnectionPool pool(swl::Address{"127.0.0.1", 6379}, 8);
///   swl::LeasingLimiter<> limiter(pool, swl::Limit{100'000, std::chrono::seconds(1)});
///   if (swl::Decision decision = limiter.tryAcquire("tenant:7"); !decision) reply429(decision.retry_after);
///
/// A key seen rarely costs what it costs a SlidingWindowLimiter: one EVALSHA of the log. A key in demand
/// is asked of Redis for a lease instead: the request's own units and as many more as the key's recent
/// demand would use in one lease duration, recorded in the shared log as one entry scored at the lease's
/// end. This process then admits the lease's units itself, with no round trip, until they run out or the
/// lease ends; and it repeats a refusal of Redis's here until its retry_after has passed. A lease takes
/// at most 1/room_divisor of what the window still has room for, so other instances get theirs. What a
/// lease did not use is given back: by the next lease call for its key (in the same call), by giveBack(),
/// and by the destructor. A process that dies gives nothing back: its units count until its lease's end
/// plus the window, and then expire with the entry.
///
/// The guarantee: no interval of one window's length sees more admissions than the limit, counted across
/// every instance and every limiter on the key, leasing or not. The price is under-admission: a leased
/// unit counts from its lease's start until the lease is given back (at the latest its end) plus the
/// window, and units leased but not yet used are kept from others meanwhile. The guide docs/leases.md has
/// the proof and the bound.
///
/// It keeps the limiter contract (limiter.hpp). Decision::tier says who decided: lease (this process,
/// from a lease; `remaining` is then what the lease has left), blocked_cache (this process, repeating
/// Redis's refusal), redis, or the failure policy. Thread-safe when its RedisClient is: a key's lease
/// is shared by all threads under a lock held for a few instructions, and while one thread asks Redis
/// for a key's next lease, the others wanting that key wait for its answer instead of asking too.
/// Rejected requests cannot be counted (refusals decided here never reach Redis).

#include <swl/composites/detail/leasing_core.hpp>
#include <swl/limiter.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>

namespace swl {

/// Hot keys decided in memory from leased units, never over the limit. Constructed as
/// `LeasingLimiter<>(RedisClient& redis, Limit limit, LimiterOptions options = {}, LeaseOptions leases = {},
/// KeyPolicy keys = {}, MemberPolicy members = {}, TtlPolicy ttl = {})`; the client must outlive it. Its calls
/// are the contract's (limiter.hpp).
template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using LeasingLimiter = LimiterFace<detail::LeasingLimiterCore<KeyPolicy, MemberPolicy, TtlPolicy>>;

}  // namespace swl
