// swl-ratelimit's statistics over statsd, end to end: the server program (CMake gives its path) started
// as Envoy Gateway's deployment starts envoyproxy/ratelimit (USE_STATSD=true, STATSD_PORT), a private
// redis-server, and a UDP socket of the test's in statsd's place. Each statistic is checked exactly, and
// every line against the mapping rules of Envoy Gateway's statsd_exporter, written here as our own data.

#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_server.hpp"
#include "support/statsd_mapping.hpp"
#include "support/statsd_receiver.hpp"

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <signal.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace rls = envoy::service::ratelimit::v3;
using swl::test::eventually;
using swl::test::RateLimitProcess;
using swl::test::RedisServer;
using swl::test::request;
using swl::test::StatsdMapping;
using swl::test::StatsdReceiver;
using swl::test::TemporaryDirectory;

// A rule near whose limit (8 of 10) hits fall, a shadow rule, and a nested rule, whose stats key has three
// fields (Envoy Gateway maps it by its regex rules, not its globs).
constexpr const char* kStatsdConfig = R"yaml(domain: shop
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: trial
    rate_limit: {unit: minute, requests_per_unit: 1}
    shadow_mode: true
  - key: tenant
    descriptors:
      - key: plan
        value: free
        rate_limit: {unit: hour, requests_per_unit: 5}
)yaml";

// Envoy Gateway's statsd_exporter mapping for envoyproxy/ratelimit (its
// internal/infrastructure/kubernetes/ratelimit/statsd_conf.yaml), rule for rule, in this test's words:
// per rule, a glob for a stats key of two fields and a regex for three or more; the calls' errors; the
// gRPC calls and their times; the configuration's loads.
std::vector<StatsdMapping> envoyGatewayStatsdRules() {
  using Match = StatsdMapping::Match;
  std::vector<StatsdMapping> rules;
  const std::vector<std::string> per_rule{"near_limit", "over_limit", "total_hits", "within_limit", "shadow_mode"};
  for (const std::string& stat : per_rule) {
    rules.push_back({"ratelimit.service.rate_limit.*.*." + stat,
                     Match::glob,
                     "",
                     "ratelimit_service_rate_limit_" + stat,
                     {{"domain", "$1"}, {"key1", "$2"}}});
  }
  for (const std::string& stat : per_rule) {
    rules.push_back({R"(ratelimit\.service\.rate_limit\.([^\.]*)\.([^\.]*)\.([^\.]*)(\..*)?\.)" + stat,
                     Match::regex,
                     "",
                     "ratelimit_service_rate_limit_" + stat,
                     {{"domain", "$1"}, {"key1", "$2"}, {"key2", "$3"}}});
  }
  rules.push_back({"ratelimit.service.call.should_rate_limit.*",
                   Match::glob,
                   "counter",
                   "ratelimit_service_should_rate_limit_error",
                   {{"err_type", "$1"}}});
  rules.push_back({"ratelimit_server.*.total_requests",
                   Match::glob,
                   "counter",
                   "ratelimit_service_total_requests",
                   {{"grpc_method", "$1"}}});
  rules.push_back({"ratelimit_server.*.response_time",
                   Match::glob,
                   "",
                   "ratelimit_service_response_time_seconds",
                   {{"grpc_method", "$1"}}});
  for (const char* load : {"config_load_success", "config_load_error"}) {
    rules.push_back({std::string("ratelimit.service.") + load,
                     Match::glob,
                     "counter",
                     std::string("ratelimit_service_") + load,
                     {}});
  }
  return rules;
}

// The server on a private Redis, its statistics sent to `statsd` every 100 ms, with `more` of
// envoyproxy/ratelimit's environment.
class StatsdServer {
 public:
  explicit StatsdServer(const StatsdReceiver& statsd, RateLimitProcess::Environment more = {})
      : config_(directory_.write("config.yaml", kStatsdConfig)),
        process_(directory_.path() / "server.out",
                 {"--config", config_.string(), "--listen", "127.0.0.1:0", "--redis",
                  "127.0.0.1:" + std::to_string(redis_.port())},
                 withStatsd(statsd, std::move(more)), RateLimitProcess::Inherit::the_tests_environment) {}

  // One call: its status code, and the overall code when it was answered.
  std::pair<grpc::StatusCode, rls::RateLimitResponse::Code> call(const rls::RateLimitRequest& sent) {
    rls::RateLimitResponse response;
    const grpc::Status status = process_.callStatus(sent, response);
    ++calls_;
    return {status.error_code(), response.overall_code()};
  }

  // SIGHUP with `text` as the configuration, once the log says the reload was done with (`logged`).
  bool reloadWith(const std::string& text, const std::string& logged) {
    const int before = process_.count(logged);
    directory_.write("config.yaml", text);
    ::kill(process_.pid(), SIGHUP);
    return eventually([&] { return process_.count(logged) > before; });
  }

  RedisServer& redis() { return redis_; }
  RateLimitProcess& process() { return process_; }
  int calls() const { return calls_; }

 private:
  static RateLimitProcess::Environment withStatsd(const StatsdReceiver& statsd, RateLimitProcess::Environment more) {
    more.insert(more.begin(), {{"USE_STATSD", "true"},
                               {"STATSD_HOST", "127.0.0.1"},
                               {"STATSD_PORT", std::to_string(statsd.port())},
                               {"STATS_FLUSH_INTERVAL", "100ms"}});
    return more;
  }

  TemporaryDirectory directory_;
  RedisServer redis_;
  std::filesystem::path config_;
  RateLimitProcess process_;
  int calls_ = 0;
};

// Every counter received, by name, summed.
std::map<std::string, std::uint64_t> statsdCounters(StatsdReceiver& statsd) {
  std::map<std::string, std::uint64_t> sums;
  for (const std::string& line : statsd.lines()) {
    const auto parsed = swl::test::parseStatsdLine(line);
    if (parsed && parsed->type == "c") sums[parsed->name] += parsed->value;
  }
  return sums;
}

}  // namespace

TEST_CASE(
    "swl-ratelimit sends envoyproxy/ratelimit's statistics to statsd, counted as it counts them, every line mapped "
    "by Envoy Gateway's statsd_exporter") {
  StatsdReceiver statsd;
  StatsdServer server(statsd);
  const auto ok = std::make_pair(grpc::StatusCode::OK, rls::RateLimitResponse::OK);
  const auto over = std::make_pair(grpc::StatusCode::OK, rls::RateLimitResponse::OVER_LIMIT);
  // alice: 10 admitted, the 9th and 10th past 8 of 10 (near); 2 refused, the window full (over).
  for (int i = 0; i < 10; ++i) CHECK(server.call(request({{{"user", "alice"}}})) == ok);
  for (int i = 0; i < 2; ++i) CHECK(server.call(request({{{"user", "alice"}}})) == over);
  // carol: 7 admitted, then 4 more refused (11 of 10): 1 over the limit, and the 9th and 10th near it.
  for (int i = 0; i < 7; ++i) CHECK(server.call(request({{{"user", "carol"}}})) == ok);
  CHECK(server.call(request({{{"user", "carol"}}}, 4)) == over);
  // A shadow rule of 1: admitted (near from the first hit), then refused in shadow, answered OK.
  CHECK(server.call(request({{{"trial", "dave"}}})) == ok);
  CHECK(server.call(request({{{"trial", "dave"}}})) == ok);
  CHECK(server.call(request({{{"tenant", "acme"}, {"plan", "free"}}})) == ok);
  // Two descriptors of a domain no file has; a request without a domain.
  CHECK(server.call(request({{{"user", "x"}}, {{"route", "y"}}}, 0, "elsewhere")) == ok);
  CHECK(server.call(request({{{"user", "x"}}}, 0, "")).first == grpc::StatusCode::INVALID_ARGUMENT);
  // A configuration refused, then one put in force (the first came at start).
  REQUIRE(server.reloadWith("domain: shop\ndescriptors: [", "configuration kept"));
  REQUIRE(server.reloadWith(kStatsdConfig, "configuration reloaded"));
  // Redis stopped: the failure mode answers, and the call counts a Redis error.
  server.redis().stop();
  CHECK(server.call(request({{{"user", "erin"}}})) == ok);

  const std::map<std::string, std::uint64_t> expected{
      {"ratelimit.service.rate_limit.shop.user.total_hits", 24},  // erin's too: counted before Redis is asked
      {"ratelimit.service.rate_limit.shop.user.within_limit", 17},
      {"ratelimit.service.rate_limit.shop.user.near_limit", 4},
      {"ratelimit.service.rate_limit.shop.user.over_limit", 3},
      {"ratelimit.service.rate_limit.shop.trial.total_hits", 2},
      {"ratelimit.service.rate_limit.shop.trial.within_limit", 1},
      {"ratelimit.service.rate_limit.shop.trial.near_limit", 1},
      {"ratelimit.service.rate_limit.shop.trial.over_limit", 1},
      {"ratelimit.service.rate_limit.shop.trial.shadow_mode", 1},
      {"ratelimit.service.rate_limit.shop.tenant.plan_free.total_hits", 1},
      {"ratelimit.service.rate_limit.shop.tenant.plan_free.within_limit", 1},
      {"ratelimit.service.rate_limit.elsewhere.domain_not_found", 2},
      {"ratelimit.service.call.should_rate_limit.service_error", 1},
      {"ratelimit.service.call.should_rate_limit.redis_error", 1},
      {"ratelimit.service.config_load_success", 2},
      {"ratelimit.service.config_load_error", 1},
      {"ratelimit_server.ShouldRateLimit.total_requests", static_cast<std::uint64_t>(server.calls())},
  };
  const std::string response_time = "ratelimit_server.ShouldRateLimit.response_time";
  const bool arrived = eventually([&] {
    return statsdCounters(statsd) == expected &&
           statsd.observed(response_time) == static_cast<std::size_t>(server.calls());
  });
  // Three flushes more: nothing counted twice, nothing else sent.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  INFO(server.process().output());
  CHECK(arrived);
  CHECK(statsdCounters(statsd) == expected);
  CHECK(statsd.observed(response_time) == static_cast<std::size_t>(server.calls()));

  const std::vector<StatsdMapping> rules = envoyGatewayStatsdRules();
  std::set<std::string> mapped_names;
  for (const std::string& line : statsd.lines()) {
    INFO(line);
    const auto parsed = swl::test::parseStatsdLine(line);
    REQUIRE(parsed);
    const auto mapped = swl::test::mapStatsd(rules, parsed->name, swl::test::statsdMetricType(parsed->type));
    // Envoy Gateway maps no domain_not_found (envoyproxy's is the same line): statsd_exporter exports it
    // under its default name.
    if (parsed->name.size() > 17 && parsed->name.substr(parsed->name.size() - 17) == ".domain_not_found") {
      CHECK_FALSE(mapped);
      continue;
    }
    REQUIRE(mapped);
    mapped_names.insert(mapped->name);
    if (parsed->name.rfind("ratelimit.service.rate_limit.shop.", 0) == 0) CHECK(mapped->labels.at("domain") == "shop");
  }
  CHECK(mapped_names.size() == 10);  // five per rule, one of both errors, the calls', their times', two loads'
  const auto user = swl::test::mapStatsd(rules, "ratelimit.service.rate_limit.shop.user.near_limit", "counter");
  CHECK(user->name == "ratelimit_service_rate_limit_near_limit");
  CHECK(user->labels == std::map<std::string, std::string>{{"domain", "shop"}, {"key1", "user"}});
  const auto nested =
      swl::test::mapStatsd(rules, "ratelimit.service.rate_limit.shop.tenant.plan_free.total_hits", "counter");
  CHECK(nested->labels ==
        std::map<std::string, std::string>{{"domain", "shop"}, {"key1", "tenant"}, {"key2", "plan_free"}});
  CHECK(swl::test::mapStatsd(rules, "ratelimit.service.call.should_rate_limit.redis_error", "counter")
            ->labels.at("err_type") == "redis_error");
  CHECK(swl::test::mapStatsd(rules, response_time, "observer")->labels.at("grpc_method") == "ShouldRateLimit");
}

TEST_CASE("EXTRA_TAGS follow every name swl-ratelimit sends to statsd, sorted by key, as gostats writes them") {
  StatsdReceiver statsd;
  StatsdServer server(statsd, {{"EXTRA_TAGS", "zone:eu.west,app:rl"}});
  CHECK(server.call(request({{{"user", "alice"}}})).first == grpc::StatusCode::OK);
  const std::string tags = ".__app=rl.__zone=eu_west";
  REQUIRE(eventually([&] {
    return statsd.counted("ratelimit_server.ShouldRateLimit.total_requests" + tags) == 1 &&
           statsd.observed("ratelimit_server.ShouldRateLimit.response_time" + tags) == 1;
  }));
  CHECK(statsd.counted("ratelimit.service.rate_limit.shop.user.total_hits" + tags) == 1);
  CHECK(statsd.counted("ratelimit.service.rate_limit.shop.user.within_limit" + tags) == 1);
  CHECK(statsd.counted("ratelimit.service.config_load_success" + tags) == 1);
  for (const std::string& line : statsd.lines()) {
    INFO(line);
    const auto parsed = swl::test::parseStatsdLine(line);
    REQUIRE(parsed);
    CHECK(parsed->name.size() > tags.size());
    CHECK(parsed->name.substr(parsed->name.size() - tags.size()) == tags);
  }
}

TEST_CASE("swl-ratelimit sends what it counted once more as it stops, whatever its flush interval (--statsd)") {
  StatsdReceiver statsd;
  TemporaryDirectory directory;
  RedisServer redis;
  RateLimitProcess server(directory.path() / "server.out",
                          {"--config", directory.write("config.yaml", kStatsdConfig).string(), "--listen",
                           "127.0.0.1:0", "--redis", "127.0.0.1:" + std::to_string(redis.port()), "--statsd",
                           "127.0.0.1:" + std::to_string(statsd.port()), "--stats-flush-interval", "3600000"},
                          {}, RateLimitProcess::Inherit::the_tests_environment);
  CHECK(server.output().find("statsd to 127.0.0.1:" + std::to_string(statsd.port()) + " every 3600000 ms") !=
        std::string::npos);
  rls::RateLimitResponse response;
  REQUIRE(server.callStatus(request({{{"user", "alice"}}}), response).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(statsd.lines().empty());  // an hour's interval: nothing yet
  ::kill(server.pid(), SIGTERM);
  CHECK(server.waitForExit(std::chrono::seconds(20)) == 0);
  CHECK(eventually([&] { return statsd.counted("ratelimit_server.ShouldRateLimit.total_requests") == 1; }));
  CHECK(statsd.counted("ratelimit.service.rate_limit.shop.user.total_hits") == 1);
  CHECK(statsd.counted("ratelimit.service.config_load_success") == 1);
}
