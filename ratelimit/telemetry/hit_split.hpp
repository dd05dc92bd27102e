#pragma once
/// \file
/// envoyproxy/ratelimit's per-rule counts of one descriptor's hits, without I/O: total_hits, and the
/// hits within the limit, near it (past NEAR_LIMIT_RATIO of it) and over it, split as its
/// base_limiter.go (GetResponseDescriptorStatus) splits them from what the window held before the
/// request and after it; shadow_mode for a shadow rule's refusal. The statsd stats (statsd_stats.hpp)
/// add these to their counters.
///
/// envoyproxy counts a refused request's hits in Redis too, so "after" is always before + hits; swl
/// records nothing of a refusal, and the decider (DescriptorReport::used_before) says what the window
/// held before, so that the counts come out as envoyproxy's would for the same window.

#include <ratelimit/decide/options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace swl::ratelimit {

/// What one descriptor adds to its rule's counters.
struct HitSplit {
  std::uint64_t total_hits = 0;
  std::uint64_t over_limit = 0;
  std::uint64_t near_limit = 0;
  std::uint64_t within_limit = 0;
  std::uint64_t shadow_mode = 0;
};

/// envoyproxy's near-limit threshold of `limit`: floor(limit * ratio), multiplied in float32 as its Go
/// does (float32(limit) * nearLimitRatio), so that a threshold at a boundary rounds alike.
inline std::uint64_t nearLimitThreshold(std::uint64_t limit, float ratio) {
  const float product = static_cast<float>(limit) * ratio;
  if (!(product > 0)) return 0;
  return static_cast<std::uint64_t>(std::floor(static_cast<double>(product)));
}

/// What `report` adds to its rule's counters, NEAR_LIMIT_RATIO being `near_ratio`. A descriptor the
/// failure policy answered adds its hits to total_hits alone: envoyproxy counts them before it asks
/// Redis, and splits nothing when Redis fails.
inline HitSplit splitHits(const DescriptorReport& report, float near_ratio) {
  HitSplit split;
  const auto hits = static_cast<std::uint64_t>(std::max<std::int64_t>(report.hits, 0));
  const auto limit = static_cast<std::uint64_t>(std::max<std::int64_t>(report.limit, 0));
  const auto before = static_cast<std::uint64_t>(std::max<std::int64_t>(report.used_before, 0));
  const std::uint64_t after = before + hits;
  // A ratio above 1 would put the threshold past the limit; envoyproxy's unsigned sums would wrap there.
  const std::uint64_t near = std::min(nearLimitThreshold(limit, near_ratio), limit);
  split.total_hits = hits;
  switch (report.outcome) {
    case DescriptorOutcome::failure_policy:
      break;
    case DescriptorOutcome::ok:
      split.within_limit = hits;
      if (after > near) split.near_limit = before >= near ? hits : after - near;
      break;
    case DescriptorOutcome::over_limit:
    case DescriptorOutcome::shadow_over_limit:
      // Hits of a window already full are all over it; else those past the limit are, and those between
      // the threshold and the limit were near it. A refusal the counts alone would not make (a GCRA's
      // spacing) refused every hit.
      if (before >= limit || after <= limit) {
        split.over_limit = hits;
      } else {
        split.over_limit = after - limit;
        split.near_limit = limit - std::max(near, before);
      }
      if (report.outcome == DescriptorOutcome::shadow_over_limit) split.shadow_mode = split.over_limit;
      break;
  }
  return split;
}

}  // namespace swl::ratelimit
