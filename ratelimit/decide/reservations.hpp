#pragma once
/// \file
/// Kuadrant's Reserve and Commit on the service's counters (DeciderOptions::reservations): a plan's
/// limited descriptors reserved together, all or nothing, through swl::MultiLimiter::reserve, and a
/// reservation committed through its commit (composites/multi_limiter.hpp says what each does). No
/// protobuf of Kuadrant's: the service (serve/kuadrant_service.hpp) turns its requests into plans.

#include <ratelimit/decide/limiters.hpp>
#include <ratelimit/decide/plan.hpp>

#include <swl/composites/multi_limiter.hpp>
#include <swl/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace swl::ratelimit {

/// What a reservation came to: reserved (with its id) or not, and each limited descriptor's decision in
/// the plan. A request that reaches no counter is reserved with an empty id: there is nothing to hold.
struct ReservationAnswer {
  bool reserved = true;
  std::string id;
};

/// The counters a reservation (or its commit) holds units of: the plan's limited descriptors, each
/// counter once. Each must be a log, and all must cost the same units (the reservation's amount).
inline std::vector<LimitedDescriptor*> heldDescriptors(const ServiceLimiters& limiters, Plan& plan,
                                                       std::string_view method) {
  if (!limiters.reservations()) {
    throw InvalidArgument("swl-ratelimit: " + std::string(method) +
                          " needs reservations, which are off: start with --reservations yes "
                          "(SWL_RATELIMIT_RESERVATIONS=true)");
  }
  std::vector<LimitedDescriptor*> held;
  for (LimitedDescriptor& each : plan.limited()) {
    const bool seen = std::any_of(held.begin(), held.end(),
                                  [&](const LimitedDescriptor* other) { return other->redis_key == each.redis_key; });
    if (seen) continue;
    if (each.counting != "log") {
      throw InvalidArgument("swl-ratelimit: " + std::string(method) + ": descriptor " + std::to_string(each.index) +
                            " is counted by " + each.counting +
                            "; only a sliding window log holds reserved units (algorithm: sliding_window_log)");
    }
    if (!held.empty() && each.hits != held.front()->hits) {
      throw InvalidArgument("swl-ratelimit: " + std::string(method) + ": descriptors " +
                            std::to_string(held.front()->index) + " and " + std::to_string(each.index) +
                            " would hold different units; a reservation holds the same amount of each counter");
    }
    held.push_back(&each);
  }
  if (held.size() > MultiLimiter<GivenKey>::kMaxRules) {
    throw InvalidArgument("swl-ratelimit: " + std::string(method) + " of " + std::to_string(held.size()) +
                          " counters; one reservation holds at most " +
                          std::to_string(MultiLimiter<GivenKey>::kMaxRules));
  }
  return held;
}

/// Reserves the plan's hits (its request's hits_addend) on every counter its descriptors reach, for
/// `hold_for`; each descriptor's decision goes into the plan. More than a counter's whole limit is
/// refused without Redis (it never fits). Redis's failures are thrown.
inline ReservationAnswer reserve(ServiceLimiters& limiters, Plan& plan, std::chrono::microseconds hold_for) {
  const std::vector<LimitedDescriptor*> held = heldDescriptors(limiters, plan, "Reserve");
  ReservationAnswer answer;
  if (held.empty()) return answer;
  std::vector<std::string_view> keys;
  std::vector<Limit> limits;
  for (const LimitedDescriptor* each : held) {
    keys.push_back(each->redis_key);
    limits.push_back(each->limit);
  }
  const std::int64_t units = held.front()->hits;
  const bool never_fits =
      std::any_of(held.begin(), held.end(), [&](const LimitedDescriptor* each) { return units > each->limit.max_requests; });
  if (never_fits) {
    for (LimitedDescriptor* each : held) each->decision = neverFits(*each);
    answer.reserved = false;
    return answer;
  }
  MultiReservation reservation = limiters.limiterFor(held).reserve(keys, units, hold_for, limits);
  for (std::size_t i = 0; i < held.size(); ++i) held[i]->decision = reservation.decision.rules[i];
  answer.reserved = static_cast<bool>(reservation);
  answer.id = std::move(reservation.id);
  return answer;
}

/// Commits the reservation `id` on the counters the plan reaches: `actual` units were spent. True when it
/// released a hold in force; otherwise a reservation committed before changes nothing, and an unknown one
/// (or one whose hold ran out) is charged `actual`. Redis's failures are thrown.
inline bool commit(ServiceLimiters& limiters, Plan& plan, std::string_view id, std::int64_t actual) {
  const std::vector<LimitedDescriptor*> held = heldDescriptors(limiters, plan, "Commit");
  if (held.empty()) return false;
  std::vector<std::string_view> keys;
  std::vector<Limit> limits;
  for (const LimitedDescriptor* each : held) {
    keys.push_back(each->redis_key);
    limits.push_back(each->limit);
  }
  return limiters.limiterFor(held).commit(keys, id, actual, limits).outcome == Commitment::released;
}

}  // namespace swl::ratelimit
