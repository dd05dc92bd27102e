#pragma once
/// \file
/// PeriodicLimiter: a quota per period, where periods are any cut of time (periods.hpp), such as calendar
/// days or months in a time zone (calendar.hpp: CalendarLimiter is this limiter over calendar periods).
///
///   swl::CalendarLimiter<> limiter(connection, 10'000, swl::CalendarPeriods::days(1, "Europe/Berlin"));
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// A request is admitted iff the units admitted in the current period plus its cost fit the quota; a
/// refusal waits until the period ends (retry_after), where any cost up to the quota fits. The period
/// is the one holding Redis's clock (or the limiter's clock, when one is given): the client sends the
/// bounds of the periods around its own now, and the script picks the one holding the shared now. One
/// small hash per key, which expires when its period ends.
///
/// It keeps the limiter contract (limiter.hpp). Its limit() is {quota, the periods' usual length}; a
/// limit given per call (a tenant's plan) changes the quota and must keep that window, since the periods
/// are the limiter's own. Thread safety: as safe as its RedisClient.

#include <swl/detail/limiter/periodic_core.hpp>
#include <swl/limiter.hpp>
#include <swl/policies/keys.hpp>

namespace swl {

/// A quota per period, where periods are any cut of time (periods.hpp): calendar days, for one. Constructed
/// as `PeriodicLimiter<>(RedisClient& redis, std::int64_t quota, Periods periods, LimiterOptions options = {},
/// KeyPolicy keys = {})`; the client must outlive it. Its calls are the contract's (limiter.hpp).
template <class KeyPolicy = PrefixKey>
using PeriodicLimiter = LimiterFace<detail::PeriodicLimiterCore<KeyPolicy>>;

}  // namespace swl
