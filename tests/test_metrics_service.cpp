// End to end: examples/metrics_service (its path in SWL_METRICS_SERVICE) limiting its simulated
// requests against a private redis-server, its /metrics scraped by a real HTTP client.

#include "support/example_service.hpp"
#include "support/redis_server.hpp"

#include <httplib.h>
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::RedisServer;

namespace {

// The service in front of `redis`, started with `flags`.
class MetricsService {
 public:
  MetricsService(const RedisServer& redis, std::vector<std::string> flags)
      : service_("SWL_METRICS_SERVICE", redis, std::move(flags), [](int port) { return !scrapeAt(port).empty(); }) {}

  // The exposition text, or "" while it does not serve.
  std::string scrape() { return scrapeAt(service_.port()); }

  // The value of the sample named exactly `series` (name and labels, as exposed), -1 when absent.
  double value(const std::string& series) {
    const std::string exposition = scrape();
    const std::size_t at = exposition.find("\n" + series + " ");
    return at == std::string::npos ? -1 : std::stod(exposition.substr(at + series.size() + 2));
  }

  // Scrapes until `holds` says yes about the value of `series`, for up to 10 s; the last value seen.
  double waitFor(const std::string& series, const std::function<bool(double)>& holds) {
    const auto give_up_at = std::chrono::steady_clock::now() + 10s;
    double seen = value(series);
    while (!holds(seen) && std::chrono::steady_clock::now() < give_up_at) {
      std::this_thread::sleep_for(50ms);
      seen = value(series);
    }
    return seen;
  }

  // Whether it exits within `timeout` (reaped then).
  bool exitsWithin(std::chrono::milliseconds timeout) {
    const auto give_up_at = std::chrono::steady_clock::now() + timeout;
    while (service_.process().alive() && std::chrono::steady_clock::now() < give_up_at) {
      std::this_thread::sleep_for(10ms);
    }
    return !service_.process().alive();
  }

  pid_t pid() { return service_.process().pid(); }

 private:
  static std::string scrapeAt(int port) {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(1s);
    client.set_read_timeout(2s);
    const httplib::Result response = client.Get("/metrics");
    return response && response->status == 200 ? response->body : std::string();
  }

  swl::test::ExampleService service_;
};

const std::string kAllowed = R"(swl_decisions_total{limiter="simulated",tier="redis",verdict="allowed"})";
const std::string kRejected = R"(swl_decisions_total{limiter="simulated",tier="redis",verdict="rejected"})";
const std::string kFailedOpen = R"(swl_decisions_total{limiter="simulated",tier="fail_open",verdict="allowed"})";
const std::string kConnectionErrors = R"(swl_errors_total{error="connection",limiter="simulated"})";
const std::string kTimed = R"(swl_decision_duration_seconds_count{limiter="simulated",tier="redis"})";

}  // namespace

TEST_CASE("the metrics service exposes the decisions Redis made for its simulated requests") {
  RedisServer redis;
  // Three users, 2 requests each per minute: the first 6 requests are admitted, every later one refused.
  MetricsService service(redis, {"--limit", "2", "--window-ms", "60000", "--rate", "100"});

  CHECK(service.waitFor(kAllowed, [](double allowed) { return allowed == 6; }) == 6);
  CHECK(service.waitFor(kRejected, [](double rejected) { return rejected >= 5; }) >= 5);
  CHECK(service.value(kAllowed) == 6);
  CHECK(service.value(kTimed) >= 11);
  CHECK(service.value(kConnectionErrors) == 0);
  const std::string exposition = service.scrape();
  CHECK_THAT(exposition, Catch::Contains("# TYPE swl_decisions_total counter"));
  CHECK_THAT(exposition, Catch::Contains("# TYPE swl_decision_duration_seconds histogram"));
}

TEST_CASE("the metrics service fails open while Redis is down, and its metrics say so") {
  RedisServer redis;
  MetricsService service(redis, {"--rate", "100"});
  REQUIRE(service.waitFor(kAllowed, [](double allowed) { return allowed > 0; }) > 0);
  redis.stop();

  CHECK(service.waitFor(kFailedOpen, [](double failed_open) { return failed_open >= 3; }) >= 3);
  CHECK(service.value(kConnectionErrors) >= 3);
}

TEST_CASE("the metrics service stops cleanly on SIGTERM, and by itself after --seconds") {
  RedisServer redis;
  {
    MetricsService service(redis, {});
    REQUIRE(::kill(service.pid(), SIGTERM) == 0);
    CHECK(service.exitsWithin(3s));
  }
  MetricsService service(redis, {"--seconds", "1"});
  CHECK(service.exitsWithin(5s));
}
