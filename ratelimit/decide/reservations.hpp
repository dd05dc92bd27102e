#pragma once
/// \file
/// Reservations on the service's counters (DeciderOptions::reservations): descriptors reserved together,
/// all or nothing, through swl::MultiLimiter::reserve, and a reservation committed through its commit
/// (composites/multi_limiter.hpp says what each does). Kuadrant's Reserve and Commit make them of a whole
/// plan (serve/kuadrant_service.hpp); Envoy's calls of the descriptors that carry reservation entries
/// (reservation_entries.hpp, through the decider).

#include <ratelimit/decide/asked.hpp>
#include <ratelimit/decide/limiters.hpp>
#include <ratelimit/decide/plan.hpp>

#include <swl/composites/multi_limiter.hpp>
#include <swl/detail/limiter/reporting.hpp>
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
inline std::vector<LimitedDescriptor*> heldDescriptors(const ServiceLimiters& limiters,
                                                       const std::vector<LimitedDescriptor*>& candidates,
                                                       std::string_view method) {
  if (!limiters.reservations()) {
    throw InvalidArgument("swl-ratelimit: " + std::string(method) +
                          " needs reservations, which are off: start with --reservations yes "
                          "(SWL_RATELIMIT_RESERVATIONS=true)");
  }
  std::vector<LimitedDescriptor*> held;
  for (LimitedDescriptor* each : candidates) {
    const bool seen = std::any_of(held.begin(), held.end(),
                                  [&](const LimitedDescriptor* other) { return other->redis_key == each->redis_key; });
    if (seen) continue;
    if (each->counting != "log") {
      throw InvalidArgument("swl-ratelimit: " + std::string(method) + ": descriptor " + std::to_string(each->index) +
                            " is counted by " + each->counting +
                            "; only a sliding window log holds reserved units (algorithm: sliding_window_log)");
    }
    if (!held.empty() && each->hits != held.front()->hits) {
      throw InvalidArgument("swl-ratelimit: " + std::string(method) + ": descriptors " +
                            std::to_string(held.front()->index) + " and " + std::to_string(each->index) +
                            " would hold different units; a reservation holds the same amount of each counter");
    }
    held.push_back(each);
  }
  if (held.size() > MultiLimiter<GivenKey>::kMaxRules) {
    throw InvalidArgument("swl-ratelimit: " + std::string(method) + " of " + std::to_string(held.size()) +
                          " counters; one reservation holds at most " +
                          std::to_string(MultiLimiter<GivenKey>::kMaxRules));
  }
  return held;
}

/// The counters of `held` as a MultiLimiter call takes them: their keys (views of the plan's) and limits.
struct CountersOf {
  explicit CountersOf(const std::vector<LimitedDescriptor*>& held) {
    for (const LimitedDescriptor* each : held) {
      keys.push_back(each->redis_key);
      limits.push_back(each->limit);
    }
  }
  std::vector<std::string_view> keys;
  std::vector<Limit> limits;
};

/// Every limited descriptor of `plan`.
inline std::vector<LimitedDescriptor*> everyLimited(Plan& plan) {
  std::vector<LimitedDescriptor*> all;
  for (LimitedDescriptor& each : plan.limited()) all.push_back(&each);
  return all;
}

/// Reserves the descriptors' hits (the same for each) on every counter they reach, for `hold_for`; each
/// descriptor's decision goes into its plan. More than a counter's whole limit is
/// refused without Redis (it never fits). Redis's failures are thrown.
inline ReservationAnswer reserve(ServiceLimiters& limiters, const std::vector<LimitedDescriptor*>& descriptors,
                                 std::chrono::microseconds hold_for) {
  const std::vector<LimitedDescriptor*> held = heldDescriptors(limiters, descriptors, "Reserve");
  ReservationAnswer answer;
  if (held.empty()) return answer;
  const CountersOf counters(held);
  const std::int64_t units = held.front()->hits;
  const bool never_fits = std::any_of(held.begin(), held.end(),
                                      [&](const LimitedDescriptor* each) { return units > each->limit.max_requests; });
  if (never_fits) {
    for (LimitedDescriptor* each : held) each->decision = neverFits(*each);
    answer.reserved = false;
    return answer;
  }
  MultiReservation reservation = limiters.limiterFor(held).reserve(counters.keys, units, hold_for, counters.limits);
  for (std::size_t i = 0; i < held.size(); ++i) held[i]->decision = reservation.decision.rules[i];
  answer.reserved = static_cast<bool>(reservation);
  answer.id = std::move(reservation.id);
  return answer;
}

/// Commits the reservation `id` on the counters the descriptors reach: `actual` units were spent. True when it
/// released a hold in force; otherwise a reservation committed before changes nothing, and an unknown one
/// (or one whose hold ran out) is charged `actual`. Redis's failures are thrown.
inline bool commit(ServiceLimiters& limiters, const std::vector<LimitedDescriptor*>& descriptors, std::string_view id,
                   std::int64_t actual) {
  const std::vector<LimitedDescriptor*> held = heldDescriptors(limiters, descriptors, "Commit");
  if (held.empty()) return false;
  const CountersOf counters(held);
  return limiters.limiterFor(held).commit(counters.keys, id, actual, counters.limits).outcome == Commitment::released;
}

/// Reservations through Envoy's calls (reservation_entries.hpp), before the plan's other descriptors are
/// decided: its `committing` descriptors commit the reservations they name (their hits spent; each
/// answered OK), then its `reserving` ones reserve their hits together, for the shortest hold any asks.
/// Returns the reservation's id, or "" (none asked, refused, or answered by `on_failure` because Redis
/// failed: a reservation is no decision the failure policy can hold).
inline std::string reserveAndCommit(ServiceLimiters& limiters, Plan& plan, FailurePolicy on_failure) {
  std::vector<LimitedDescriptor*> reserving, committing;
  for (LimitedDescriptor& each : plan.limited()) {
    if (each.hold_for.count() > 0) reserving.push_back(&each);
    if (!each.reservation.empty()) committing.push_back(&each);
  }
  try {
    for (LimitedDescriptor* each : committing) {
      commit(limiters, {each}, each->reservation, each->hits);
      Decision spent;  // the stream is over: nothing to refuse
      spent.allowed = true;
      spent.limit = each->limit.max_requests;
      each->decision = spent;
    }
    if (reserving.empty()) return {};
    std::chrono::microseconds hold_for = reserving.front()->hold_for;
    for (const LimitedDescriptor* each : reserving) hold_for = std::min(hold_for, each->hold_for);
    return reserve(limiters, reserving, hold_for).id;
  } catch (const InvalidArgument&) {
    throw;
  } catch (const Error&) {
    for (std::vector<LimitedDescriptor*>* failed : {&committing, &reserving}) {
      for (LimitedDescriptor* each : *failed) {
        each->decision =
            detail::failurePolicyAnswer(on_failure, each->limit, each->hits, std::current_exception()).decision;
      }
    }
    return {};
  }
}

}  // namespace swl::ratelimit
