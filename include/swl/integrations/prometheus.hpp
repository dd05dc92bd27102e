#pragma once
/// \file
/// PrometheusMetrics: an Observer (observer.hpp) that counts every decision and error of the limiters it
/// is given to, and times them, in a prometheus-cpp Registry. Link swl::prometheus (CMake component
/// "prometheus"); swl/swl.hpp does not include this header, so the core needs no prometheus-cpp.
///
///   auto registry = std::make_shared<prometheus::Registry>();
///   swl::PrometheusMetrics metrics(*registry, "api");
///   swl::LimiterOptions options;
///   options.observer = metrics.observer();
///   swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{100, 10s}, options);
///   prometheus::Exposer exposer("127.0.0.1:9464");
///   exposer.RegisterCollectable(registry);
///
/// What it exports, every series labelled limiter="<name>":
///
///   swl_decisions_total{verdict, tier}            counter   verdict: allowed, rejected, shadow_rejected, error
///                                                           tier: redis, fail_open, fail_closed, in_memory,
///                                                                 blocked_cache, insurance, lease (swl::Tier)
///   swl_errors_total{error}                       counter   why Redis or the input failed: invalid_argument,
///                                                           timeout, auth, connection, protocol, reply, other;
///                                                           counted also when a failure policy answered instead
///   swl_decision_duration_seconds{tier}           histogram the call's time inside swl, 50us..1s
///
/// Every series is created up front (zeros included, as Prometheus's rate() wants), so recording an event
/// is a few array look-ups and atomic increments: no allocation, no lock of ours, safe from any thread.
/// The observer refers to the series, which live in the registry: the registry must outlive every limiter
/// holding the observer. The PrometheusMetrics object itself may go before them.

#include <swl/decision.hpp>
#include <swl/error.hpp>
#include <swl/observer.hpp>

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {
namespace detail {

// Whether `values` is every value of the enum, in order: then an array can be indexed by them.
template <class Enum, std::size_t N>
constexpr bool isEveryValueInOrder(const std::array<Enum, N>& values) {
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(values[i]) != i) return false;
  }
  return true;
}

}  // namespace detail

/// An Observer that counts every decision and error of a limiter, and times its calls, in a
/// prometheus-cpp Registry (prometheus.hpp names the families and labels).
class PrometheusMetrics {
 public:
  /// Why a call went wrong, from the type of the swl::Error it met: the `error` label's values.
  enum class ErrorKind {
    invalid_argument,  ///< swl::InvalidArgument: bad input or configuration, nothing sent
    timeout,           ///< swl::TimeoutError: a connect or a reply took longer than its timeout
    auth,              ///< swl::AuthError: a wrong or missing password or user
    connection,        ///< any other swl::ConnectionError: refused, reset, closed, a circuit open
    protocol,          ///< swl::ProtocolError: a reply of a shape swl does not expect
    reply,             ///< any other swl::ReplyError: Redis answered with an error (OOM, NOPERM, ...)
    other,             ///< any other swl::Error
  };

  /// Every Verdict, in order: the `verdict` label's values, each series made up front.
  static constexpr std::array<Verdict, 4> kVerdicts{Verdict::allowed, Verdict::rejected, Verdict::shadow_rejected,
                                                    Verdict::error};
  /// Every Tier, in order: the `tier` label's values.
  static constexpr std::array<Tier, 10> kTiers{
      Tier::redis,     Tier::fail_open, Tier::fail_closed, Tier::in_memory, Tier::blocked_cache,
      Tier::insurance, Tier::lease,     Tier::allow_list,  Tier::deny_list, Tier::blocked};
  /// Every ErrorKind, in order: the `error` label's values.
  static constexpr std::array<ErrorKind, 7> kErrorKinds{
      ErrorKind::invalid_argument, ErrorKind::timeout, ErrorKind::auth, ErrorKind::connection,
      ErrorKind::protocol,         ErrorKind::reply,   ErrorKind::other};

  /// The histogram's upper bounds, in seconds: a local Redis answers in tens of microseconds, a remote one
  /// in a millisecond or two, and anything near a second is a timeout in the making.
  static std::vector<double> durationBuckets() {
    return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0};
  }

  /// Registers the three families in `registry` (or joins them, if another PrometheusMetrics did) and
  /// the series of `limiter`. Two PrometheusMetrics with the same name share their series.
  explicit PrometheusMetrics(prometheus::Registry& registry, std::string limiter = "default")
      : series_(std::make_shared<Series>(registry, limiter)), limiter_(std::move(limiter)) {}

  /// For LimiterOptions::observer. It holds the series, not this object.
  Observer observer() const {
    return [series = series_](const DecisionEvent& event) { series->record(event); };
  }

  /// What observer() does with one event: for an observer of your own that also feeds these metrics.
  void record(const DecisionEvent& event) const { series_->record(event); }

  /// The `limiter` label's value.
  const std::string& limiter() const noexcept { return limiter_; }

  /// The ErrorKind of `error`: its most specific class that has a label.
  static ErrorKind kindOf(const Error& error) noexcept {
    if (dynamic_cast<const InvalidArgument*>(&error) != nullptr) return ErrorKind::invalid_argument;
    if (dynamic_cast<const TimeoutError*>(&error) != nullptr) return ErrorKind::timeout;
    if (dynamic_cast<const AuthError*>(&error) != nullptr) return ErrorKind::auth;
    if (dynamic_cast<const ConnectionError*>(&error) != nullptr) return ErrorKind::connection;
    if (dynamic_cast<const ProtocolError*>(&error) != nullptr) return ErrorKind::protocol;
    if (dynamic_cast<const ReplyError*>(&error) != nullptr) return ErrorKind::reply;
    return ErrorKind::other;
  }

  /// "invalid_argument", "timeout", ...: the `error` label's value.
  static constexpr std::string_view toString(ErrorKind kind) noexcept {
    switch (kind) {
      case ErrorKind::invalid_argument:
        return "invalid_argument";
      case ErrorKind::timeout:
        return "timeout";
      case ErrorKind::auth:
        return "auth";
      case ErrorKind::connection:
        return "connection";
      case ErrorKind::protocol:
        return "protocol";
      case ErrorKind::reply:
        return "reply";
      case ErrorKind::other:
        return "other";
    }
    return "unknown";
  }

 private:
  class Series {
   public:
    Series(prometheus::Registry& registry, const std::string& limiter) {
      auto& decisions = prometheus::BuildCounter()
                            .Name("swl_decisions_total")
                            .Help("Rate-limit decisions, by verdict and by the tier that decided")
                            .Register(registry);
      auto& errors = prometheus::BuildCounter()
                         .Name("swl_errors_total")
                         .Help("Failures met while deciding (counted also when a failure policy answered)")
                         .Register(registry);
      auto& durations = prometheus::BuildHistogram()
                            .Name("swl_decision_duration_seconds")
                            .Help("Time a rate-limit decision took inside swl, Redis round trip included")
                            .Register(registry);
      for (const Tier tier : kTiers) {
        const std::string tier_name(swl::toString(tier));
        for (const Verdict verdict : kVerdicts) {
          decisions_[index(verdict)][index(tier)] = &decisions.Add(
              {{"limiter", limiter}, {"verdict", std::string(swl::toString(verdict))}, {"tier", tier_name}});
        }
        durations_[index(tier)] = &durations.Add({{"limiter", limiter}, {"tier", tier_name}}, durationBuckets());
      }
      for (const ErrorKind kind : kErrorKinds) {
        errors_[index(kind)] = &errors.Add({{"limiter", limiter}, {"error", std::string(toString(kind))}});
      }
    }

    void record(const DecisionEvent& event) const {
      const std::size_t verdict = index(event.verdict);
      const std::size_t tier = index(event.tier);
      // A tier added to swl::Tier after this header was written has no series: skip rather than guess.
      if (verdict < kVerdicts.size() && tier < kTiers.size()) {
        decisions_[verdict][tier]->Increment();
        durations_[tier]->Observe(std::chrono::duration<double>(event.latency).count());
      }
      if (event.error != nullptr) errors_[index(kindOf(*event.error))]->Increment();
    }

   private:
    template <class Enum>
    static constexpr std::size_t index(Enum value) noexcept {
      return static_cast<std::size_t>(value);
    }

    std::array<std::array<prometheus::Counter*, kTiers.size()>, kVerdicts.size()> decisions_{};
    std::array<prometheus::Histogram*, kTiers.size()> durations_{};
    std::array<prometheus::Counter*, kErrorKinds.size()> errors_{};
  };

  std::shared_ptr<const Series> series_;
  std::string limiter_;
};

static_assert(detail::isEveryValueInOrder(PrometheusMetrics::kVerdicts) &&
              detail::isEveryValueInOrder(PrometheusMetrics::kTiers) &&
              detail::isEveryValueInOrder(PrometheusMetrics::kErrorKinds));

}  // namespace swl
