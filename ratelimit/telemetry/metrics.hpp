#pragma once
/// \file
/// swl-ratelimit's metrics for Prometheus, served on --metrics HOST:PORT at /metrics:
///
///   swl_ratelimit_descriptors_total{rule, outcome}   counter  per rule (its stats key, "shop.user", or
///                                                             "override"), what its descriptors got: ok,
///                                                             over_limit, shadow_over_limit, failure_policy
///
/// beside the library's own series for its decisions (swl/integrations/prometheus.hpp: swl_decisions_total,
/// swl_errors_total, swl_decision_duration_seconds, labelled limiter="swl-ratelimit").

#include <ratelimit/decide/options.hpp>

#include <swl/integrations/prometheus.hpp>

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <map>
#include <string>
#include <string_view>

namespace swl::ratelimit {

class DescriptorMetrics {
 public:
  explicit DescriptorMetrics(prometheus::Registry& registry)
      : descriptors_(prometheus::BuildCounter()
                         .Name("swl_ratelimit_descriptors_total")
                         .Help("Limited descriptors decided, per rule and outcome")
                         .Register(registry)) {}

  /// Counts one descriptor's outcome. prometheus-cpp finds the series of these labels, or makes it.
  void count(std::string_view rule, DescriptorOutcome outcome) {
    descriptors_.Add({{"rule", std::string(rule)}, {"outcome", nameOf(outcome)}}).Increment();
  }

 private:
  prometheus::Family<prometheus::Counter>& descriptors_;
};

}  // namespace swl::ratelimit
