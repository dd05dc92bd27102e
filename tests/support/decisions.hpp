#pragma once
// Comparing decisions in tests.

#include <swl/decision.hpp>

namespace swl::test {

// Whether two decisions say the same in every number a caller acts on.
inline bool sameDecision(const swl::Decision& a, const swl::Decision& b) {
  return a.allowed == b.allowed && a.limit == b.limit && a.remaining == b.remaining && a.retry_after == b.retry_after &&
         a.reset_after == b.reset_after && a.tier == b.tier;
}

}  // namespace swl::test
