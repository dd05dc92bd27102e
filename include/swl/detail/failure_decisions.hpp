#pragma once
// The decisions a failure policy hands out when no tier could count: every limiter answers alike.

#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace swl::detail {

// No count to go by: ask the caller back after a second, or sooner for a shorter window.
inline Decision refusedBlind(const Limit& limit) {
  Decision decision;
  decision.limit = limit.max_requests;
  decision.retry_after = std::min<std::chrono::microseconds>(limit.window, std::chrono::seconds(1));
  decision.reset_after = decision.retry_after;
  decision.source = DecisionSource::fail_closed;
  return decision;
}

// FailurePolicy::allow or deny's answer for `cost` units (not for throw_error, which has none).
inline Decision policyDecision(FailurePolicy policy, const Limit& limit, std::int64_t cost) {
  if (policy != FailurePolicy::allow) return refusedBlind(limit);
  Decision decision;
  decision.allowed = true;
  decision.limit = limit.max_requests;
  decision.remaining = limit.max_requests - cost;
  decision.source = DecisionSource::fail_open;
  return decision;
}

}  // namespace swl::detail
