// PrometheusMetrics: the series it registers and what each decision and error adds to them, read back
// from the registry, with limiters deciding against a private redis-server.

#include <swl/integrations/prometheus.hpp>
#include <swl/swl.hpp>

#include "support/redis_server.hpp"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::RedisServer;

namespace {

using Labels = std::map<std::string, std::string>;

// The one sample of `family` whose labels are exactly `labels`; nullopt when there is none.
std::optional<prometheus::ClientMetric> sample(const prometheus::Registry& registry, const std::string& family,
                                               const Labels& labels) {
  for (const prometheus::MetricFamily& collected : registry.Collect()) {
    if (collected.name != family) continue;
    for (const prometheus::ClientMetric& metric : collected.metric) {
      Labels found;
      for (const auto& label : metric.label) found[label.name] = label.value;
      if (found == labels) return metric;
    }
  }
  return std::nullopt;
}

double decisions(const prometheus::Registry& registry, const std::string& verdict, const std::string& tier,
                 const std::string& limiter = "default") {
  const auto metric =
      sample(registry, "swl_decisions_total", {{"limiter", limiter}, {"verdict", verdict}, {"tier", tier}});
  REQUIRE(metric);
  return metric->counter.value;
}

double errors(const prometheus::Registry& registry, const std::string& error, const std::string& limiter = "default") {
  const auto metric = sample(registry, "swl_errors_total", {{"limiter", limiter}, {"error", error}});
  REQUIRE(metric);
  return metric->counter.value;
}

prometheus::ClientMetric::Histogram durations(const prometheus::Registry& registry, const std::string& tier,
                                              const std::string& limiter = "default") {
  const auto metric = sample(registry, "swl_decision_duration_seconds", {{"limiter", limiter}, {"tier", tier}});
  REQUIRE(metric);
  return metric->histogram;
}

double totalErrors(const prometheus::Registry& registry) {
  double total = 0;
  for (const auto kind : swl::PrometheusMetrics::kErrorKinds) {
    total += errors(registry, std::string(swl::PrometheusMetrics::toString(kind)));
  }
  return total;
}

swl::LimiterOptions observedBy(const swl::PrometheusMetrics& metrics, swl::FailurePolicy on_failure) {
  swl::LimiterOptions options;
  options.on_failure = on_failure;
  options.observer = metrics.observer();
  return options;
}

}  // namespace

TEST_CASE("every series exists from the start, at zero, for each verdict and tier") {
  prometheus::Registry registry;
  const swl::PrometheusMetrics metrics(registry);
  for (const auto tier : swl::PrometheusMetrics::kTiers) {
    for (const auto verdict : swl::PrometheusMetrics::kVerdicts) {
      CHECK(decisions(registry, std::string(swl::toString(verdict)), std::string(swl::toString(tier))) == 0);
    }
    const auto histogram = durations(registry, std::string(swl::toString(tier)));
    CHECK(histogram.sample_count == 0);
    REQUIRE(histogram.bucket.size() == swl::PrometheusMetrics::durationBuckets().size() + 1);  // and +Inf
    CHECK(histogram.bucket.front().upper_bound == Approx(50e-6));
    CHECK(histogram.bucket[histogram.bucket.size() - 2].upper_bound == Approx(1.0));
  }
  CHECK(totalErrors(registry) == 0);
}

TEST_CASE("decisions Redis makes are counted as allowed and rejected in the redis tier, and timed") {
  RedisServer server;
  auto connection = server.connect();
  prometheus::Registry registry;
  const swl::PrometheusMetrics metrics(registry);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 10s},
                                      observedBy(metrics, swl::FailurePolicy::throw_error));

  for (int i = 0; i < 5; ++i) limiter.tryAcquire("user:42");

  CHECK(decisions(registry, "allowed", "redis") == 3);
  CHECK(decisions(registry, "rejected", "redis") == 2);
  CHECK(decisions(registry, "error", "redis") == 0);
  CHECK(decisions(registry, "allowed", "fail_open") == 0);
  CHECK(totalErrors(registry) == 0);
  const auto histogram = durations(registry, "redis");
  CHECK(histogram.sample_count == 5);
  CHECK(histogram.sample_sum > 0);
  CHECK(histogram.sample_sum < 5.0);
  CHECK(histogram.bucket.back().cumulative_count == 5);
}

TEST_CASE("when Redis is down and the policy admits, the fail_open tier and the connection error are counted") {
  RedisServer server;
  auto connection = server.connect(swl::test::failFast(200ms));
  prometheus::Registry registry;
  const swl::PrometheusMetrics metrics(registry);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 10s}, observedBy(metrics, swl::FailurePolicy::allow));
  limiter.tryAcquire("user:42");
  server.stop();

  for (int i = 0; i < 2; ++i) CHECK(limiter.tryAcquire("user:42").tier == swl::Tier::fail_open);

  CHECK(decisions(registry, "allowed", "redis") == 1);
  CHECK(decisions(registry, "allowed", "fail_open") == 2);
  CHECK(errors(registry, "connection") == 2);
  CHECK(totalErrors(registry) == 2);
  CHECK(durations(registry, "fail_open").sample_count == 2);
}

TEST_CASE("when Redis is down and the policy refuses, the fail_closed tier is counted") {
  RedisServer server;
  auto connection = server.connect(swl::test::failFast(200ms));
  prometheus::Registry registry;
  const swl::PrometheusMetrics metrics(registry);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 10s}, observedBy(metrics, swl::FailurePolicy::deny));
  server.stop();

  CHECK_FALSE(limiter.tryAcquire("user:42"));

  CHECK(decisions(registry, "rejected", "fail_closed") == 1);
  CHECK(errors(registry, "connection") == 1);
}

TEST_CASE("when Redis is down and the policy throws, the call is an error verdict with its error kind") {
  RedisServer server;
  auto connection = server.connect(swl::test::failFast(200ms));
  prometheus::Registry registry;
  const swl::PrometheusMetrics metrics(registry);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 10s},
                                      observedBy(metrics, swl::FailurePolicy::throw_error));
  server.stop();

  CHECK_THROWS_AS(limiter.tryAcquire("user:42"), swl::ConnectionError);

  CHECK(decisions(registry, "error", "redis") == 1);
  CHECK(errors(registry, "connection") == 1);
  CHECK(durations(registry, "redis").sample_count == 1);
}

TEST_CASE("invalid input is an error verdict counted as invalid_argument, whatever the failure policy") {
  RedisServer server;
  auto connection = server.connect();
  prometheus::Registry registry;
  const swl::PrometheusMetrics metrics(registry);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 10s}, observedBy(metrics, swl::FailurePolicy::allow));

  CHECK_THROWS_AS(limiter.tryAcquire("user:42", 0), swl::InvalidArgument);
  CHECK_THROWS_AS(limiter.tryAcquire("", 1), swl::InvalidArgument);

  CHECK(decisions(registry, "error", "redis") == 2);
  CHECK(errors(registry, "invalid_argument") == 2);
  CHECK(totalErrors(registry) == 2);
}

TEST_CASE("each swl error type maps to its own error label") {
  using Kind = swl::PrometheusMetrics::ErrorKind;
  const auto kind = [](const swl::Error& error) { return swl::PrometheusMetrics::kindOf(error); };
  CHECK(kind(swl::InvalidArgument("x")) == Kind::invalid_argument);
  CHECK(kind(swl::TimeoutError("x")) == Kind::timeout);
  CHECK(kind(swl::AuthError("x")) == Kind::auth);
  CHECK(kind(swl::ConnectionError("x")) == Kind::connection);
  CHECK(kind(swl::ProtocolError("x")) == Kind::protocol);
  CHECK(kind(swl::ReplyError("x")) == Kind::reply);
  CHECK(kind(swl::Error("x")) == Kind::other);
}

TEST_CASE("limiters with different names share the families but not the series") {
  RedisServer server;
  auto connection = server.connect();
  prometheus::Registry registry;
  swl::LimiterOptions login_options;
  swl::LimiterOptions search_options;
  {
    // The observers hold the series, not the PrometheusMetrics objects, which may go first.
    const swl::PrometheusMetrics login(registry, "login");
    const swl::PrometheusMetrics search(registry, "search");
    login_options.observer = login.observer();
    search_options.observer = search.observer();
  }
  swl::SlidingWindowLimiter<> login(connection, swl::Limit{1, 10s}, login_options, swl::PrefixKey("login"));
  swl::SlidingWindowLimiter<> search(connection, swl::Limit{5, 10s}, search_options, swl::PrefixKey("search"));

  login.tryAcquire("user:42");
  login.tryAcquire("user:42");
  search.tryAcquire("user:42");

  CHECK(decisions(registry, "allowed", "redis", "login") == 1);
  CHECK(decisions(registry, "rejected", "redis", "login") == 1);
  CHECK(decisions(registry, "allowed", "redis", "search") == 1);
  CHECK(decisions(registry, "rejected", "redis", "search") == 0);

  const std::string exposition = prometheus::TextSerializer().Serialize(registry.Collect());
  CHECK_THAT(exposition, Catch::Contains(R"(swl_decisions_total{limiter="login",tier="redis",verdict="rejected"} 1)"));
  CHECK_THAT(exposition, Catch::Contains("# TYPE swl_decision_duration_seconds histogram"));
  CHECK_THAT(exposition, Catch::Contains("# TYPE swl_errors_total counter"));
}

TEST_CASE("threads sharing a limiter over a pool are all counted, exactly") {
  RedisServer server;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), swl::PoolOptions{4, 2s});
  prometheus::Registry registry;
  const swl::PrometheusMetrics metrics(registry);
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{100, 60s}, observedBy(metrics, swl::FailurePolicy::throw_error));

  std::vector<std::thread> threads;
  for (int thread = 0; thread < 4; ++thread) {
    threads.emplace_back([&] {
      for (int call = 0; call < 50; ++call) limiter.tryAcquire("user:42");
    });
  }
  for (std::thread& thread : threads) thread.join();

  CHECK(decisions(registry, "allowed", "redis") == 100);
  CHECK(decisions(registry, "rejected", "redis") == 100);
  CHECK(durations(registry, "redis").sample_count == 200);
}
