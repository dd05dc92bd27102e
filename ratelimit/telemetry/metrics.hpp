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

#include <swl/error.hpp>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <exception>
#include <memory>
#include <string>
#include <string_view>

namespace swl::ratelimit {

/// swl_ratelimit_descriptors_total, in a registry.
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

/// The server's metrics, served by prometheus-cpp's HTTP server on `listen` (HOST:PORT; none when empty)
/// under `path`, from the moment they are made until they are destroyed.
class ServedMetrics {
 public:
  /// Throws swl::Error when the metrics cannot be served on `listen`.
  ServedMetrics(const std::string& listen, const std::string& path) : decisions_(*registry_, "swl-ratelimit") {
    if (listen.empty()) return;
    try {
      exposer_ = std::make_unique<prometheus::Exposer>(listen);
    } catch (const std::exception& error) {
      throw Error("swl-ratelimit: cannot serve metrics on " + listen + ": " + error.what());
    }
    exposer_->RegisterCollectable(registry_, path);
  }

  /// Who is told of each decision: these metrics, where they are served (they must outlive the decider).
  DecisionObservers observers() {
    DecisionObservers observers;
    if (!exposer_) return observers;
    observers.observer = decisions_.observer();
    // An override's series is "override", whatever its keys: the series stay the configuration's.
    observers.on_descriptor = [this](const DescriptorReport& report) {
      descriptors_.count(report.overridden ? "override" : report.stats_key, report.outcome);
    };
    return observers;
  }

  /// The port they are served on (the one chosen, for port 0); 0 where they are not served.
  int port() const { return exposer_ ? exposer_->GetListeningPorts().front() : 0; }

 private:
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  PrometheusMetrics decisions_;
  DescriptorMetrics descriptors_{*registry_};
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace swl::ratelimit
