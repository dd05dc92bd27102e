#pragma once
/// \file
/// What a decision asks of one limited descriptor, and its decision read back for what was asked; the
/// decisions that need no Redis. No I/O: the decider (decider.hpp) sends what these say.
///
/// A descriptor is asked its hits (all or nothing with the request's others), or checked (hits_addend
/// 0: refused only while its counter holds more than its limit, as envoyproxy/ratelimit refuses a check),
/// or charged (DeciderOptions::charge_descriptor_hits: units already spent, recorded whatever they find).

#include <ratelimit/decide/plan.hpp>

#include <swl/decision.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace swl::ratelimit {

/// What a call asks of a descriptor.
enum class Asked { hits, check, charge };

/// Whether a descriptor's counter can hold more than its limit, so that a check is asked past the limit
/// and a charge recorded whole: a log's and a fixed window's can (a limit comes with each call, and none
/// is stored); a GCRA rule's limit is its pace, and one charge takes at most all of it.
inline bool holdsPastLimit(const LimitedDescriptor& each) { return each.counting != "gcra"; }

/// The cost and the limit one call gives a descriptor.
struct AskedOf {
  std::int64_t cost;
  Limit limit;
};

/// Its hits under its limit; a check, 1 hit under one more than the limit (it fits while the counter
/// holds no more than the limit); a charge, its hits under a limit that holds them (GCRA: at most its
/// limit).
inline AskedOf askedOf(const LimitedDescriptor& each, Asked asked) {
  AskedOf call{each.hits, each.limit};
  if (asked == Asked::check) {
    call.cost = 1;
    if (holdsPastLimit(each) && !each.peek) call.limit.max_requests += 1;
  } else if (asked == Asked::charge) {
    if (holdsPastLimit(each)) {
      call.limit.max_requests = std::max(call.limit.max_requests, call.cost);
    } else {
      call.cost = std::min(call.cost, call.limit.max_requests);
    }
  }
  return call;
}

/// A check's decision under the descriptor's limit, from the dry run askedOf made: what is left as it
/// stands (one less than under the limit it was asked under). A GCRA rule holds nothing past its limit:
/// what no hit gets is OK, with that left. Kuadrant's check (LimitedDescriptor::peek) is the dry run's.
inline Decision checkedUnder(const LimitedDescriptor& each, Decision asked) {
  if (each.peek) return asked;  // Kuadrant's check: whether one more fits, as the dry run says
  if (holdsPastLimit(each)) {
    asked.limit = each.limit.max_requests;
    asked.remaining = std::max<std::int64_t>(0, asked.remaining - 1);
  } else {
    asked.allowed = asked.allowed || asked.tier == Tier::redis;
  }
  return asked;
}

/// A charge's decision under the descriptor's limit, from the one it was recorded under: it fitted when
/// the counter holds no more than the limit now.
inline Decision chargedUnder(const LimitedDescriptor& each, Decision recorded) {
  const std::int64_t limit = each.limit.max_requests;
  if (recorded.tier != Tier::redis) return recorded;  // the failure policy answered
  if (!holdsPastLimit(each)) {
    recorded.allowed = recorded.allowed && each.hits <= limit;
    return recorded;
  }
  // Recorded under a limit that holds the charge: refused there, the counter holds more than that limit,
  // which is at least this one; admitted, it holds exactly that limit less what is left.
  const std::int64_t held = recorded.allowed ? recorded.limit - recorded.remaining : limit + 1;
  recorded.allowed = held <= limit;
  recorded.limit = limit;
  recorded.remaining = std::max<std::int64_t>(0, limit - held);
  return recorded;
}

/// A refusal no wait can end (the whole limit, 0 included, is less than the hits), without Redis.
inline Decision neverFits(const LimitedDescriptor& each) {
  Decision decision;
  decision.allowed = false;
  decision.limit = each.limit.max_requests;
  decision.retry_after = std::chrono::duration_cast<std::chrono::microseconds>(each.limit.window);
  decision.reset_after = decision.retry_after;
  return decision;
}

/// A check of a limit of 0 (hits_addend 0): OK, with nothing left, as envoyproxy/ratelimit answers it.
inline Decision checkedEmpty(const LimitedDescriptor& each) {
  Decision decision;
  decision.allowed = true;
  decision.limit = 0;
  decision.reset_after = std::chrono::duration_cast<std::chrono::microseconds>(each.limit.window);
  return decision;
}

}  // namespace swl::ratelimit
