// swl-ratelimit's operating surface: its log, its health, /json, the watcher that reloads it, alone and
// without I/O where they have none; then the server started with envoyproxy/ratelimit's environment
// alone, as a manifest written for that server starts it, its configuration a Kubernetes ConfigMap's
// mount that is updated under load.

#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_server.hpp"

#include <ratelimit/config/source.hpp>
#include <ratelimit/reload/watcher.hpp>
#include <ratelimit/serve/http.hpp>
#include <ratelimit/telemetry/log.hpp>

#include <csignal>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace rls = envoy::service::ratelimit::v3;
namespace rl = swl::ratelimit;
using swl::test::eventually;
using swl::test::RateLimitProcess;
using swl::test::RedisServer;
using swl::test::request;
using swl::test::TemporaryDirectory;

using Clock = std::chrono::steady_clock;

// The rules of the domain "shop", with a user's limit of `per_minute`.
std::string shopRules(int per_minute) {
  std::string rules = swl::test::kShopRules;
  rules.replace(rules.find("requests_per_unit: 3"), 20, "requests_per_unit: " + std::to_string(per_minute));
  return rules + "  - key: route\n    rate_limit: {unit: minute, requests_per_unit: 100000}\n";
}

// Line 4 of it is wrong: a unit envoyproxy/ratelimit does not have.
const std::string kWrongRules =
    "domain: shop\ndescriptors:\n  - key: user\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n";

// A Kubernetes ConfigMap's mount as the kubelet keeps it: each version of the files in a `..<time>`
// directory, `..data` pointing at the current one, and each file a symlink through `..data`. An update
// writes the new version beside the old, points `..data_tmp` at it, renames that over `..data`, and
// removes the old version: the files change in one rename.
class ConfigMapMount {
 public:
  ConfigMapMount(std::filesystem::path directory, const std::map<std::string, std::string>& files)
      : directory_(std::move(directory)) {
    std::filesystem::create_directories(directory_);
    const std::string version = writeVersion(files);
    std::filesystem::create_directory_symlink(version, directory_ / "..data");
    for (const auto& [name, text] : files) {
      std::filesystem::create_symlink(std::filesystem::path("..data") / name, directory_ / name);
    }
    current_ = version;
  }

  void update(const std::map<std::string, std::string>& files) {
    const std::string version = writeVersion(files);
    std::filesystem::create_directory_symlink(version, directory_ / "..data_tmp");
    std::filesystem::rename(directory_ / "..data_tmp", directory_ / "..data");
    std::filesystem::remove_all(directory_ / current_);
    current_ = version;
  }

 private:
  std::string writeVersion(const std::map<std::string, std::string>& files) {
    const std::string version = "..2026_07_05_10_00_0" + std::to_string(++versions_) + ".123456789";
    std::filesystem::create_directory(directory_ / version);
    for (const auto& [name, text] : files) std::ofstream(directory_ / version / name) << text;
    return version;
  }

  std::filesystem::path directory_;
  std::string current_;
  int versions_ = 0;
};

// The environment of a manifest written for envoyproxy/ratelimit, as its README's examples have it:
// the files in ROOT/ratelimit/config, Redis over TCP, both listeners on ports the OS chooses.
RateLimitProcess::Environment envoyEnvironment(const std::filesystem::path& root, int redis_port) {
  return {{"REDIS_SOCKET_TYPE", "tcp"},
          {"REDIS_URL", "127.0.0.1:" + std::to_string(redis_port)},
          {"RUNTIME_ROOT", root.string()},
          {"RUNTIME_SUBDIRECTORY", "ratelimit"},
          {"RUNTIME_WATCH_ROOT", "false"},
          {"RUNTIME_IGNOREDOTFILES", "true"},
          {"USE_STATSD", "false"},
          {"LOG_LEVEL", "debug"},
          {"GRPC_PORT", "0"},
          {"PORT", "0"}};
}

std::uint32_t userLimit(RateLimitProcess& server, const std::string& user) {
  rls::RateLimitResponse response;
  if (!server.callStatus(request({{{"user", user}}}), response).ok() || response.statuses_size() != 1) return 0;
  return response.statuses(0).current_limit().requests_per_unit();
}

// A client calling from a thread of its own the whole time, until it is destroyed: how many calls failed.
class CallsUnderway {
 public:
  explicit CallsUnderway(RateLimitProcess& server)
      : thread_([this, &server] {
          while (!done_) {
            rls::RateLimitResponse response;
            if (!server.callStatus(request({{{"route", "/other"}}}), response).ok()) ++failed_;
            ++calls_;
          }
        }) {}
  ~CallsUnderway() { stop(); }
  CallsUnderway(const CallsUnderway&) = delete;
  CallsUnderway& operator=(const CallsUnderway&) = delete;

  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int calls() const { return calls_; }
  int failed() const { return failed_; }

 private:
  std::atomic<bool> done_{false};
  std::atomic<int> calls_{0};
  std::atomic<int> failed_{0};
  std::thread thread_;
};

}  // namespace

TEST_CASE("swl-ratelimit's log writes a line of text or a JSON object per event, at the levels asked") {
  const auto at = std::chrono::system_clock::time_point(std::chrono::microseconds(1'783'246'272'345'678));
  CHECK(rl::logLine(rl::LogFormat::text, rl::LogLevel::info, at, "swl-ratelimit: listening on 0.0.0.0:8081") ==
        "2026-07-05T10:11:12.345678Z info swl-ratelimit: listening on 0.0.0.0:8081");
  // The fields envoyproxy/ratelimit's LOG_FORMAT=json names, and every byte of the message escaped.
  CHECK(rl::logLine(rl::LogFormat::json, rl::LogLevel::warn, at, "a \"b\"\\c\nd\x01") ==
        R"({"@timestamp":"2026-07-05T10:11:12.345678Z","level":"warn","@message":"a \"b\"\\c\nd\u0001"})");

  std::ostringstream out;
  rl::Log log({rl::LogLevel::warn, rl::LogFormat::text}, out);
  log.info("started");
  log.debug("details");
  log.warn("a configuration refused");
  log.error("gone");
  const std::string text = out.str();
  CHECK(text.find("started") == std::string::npos);
  CHECK(text.find("details") == std::string::npos);
  CHECK(text.find(" warn a configuration refused\n") != std::string::npos);
  CHECK(text.find(" error gone\n") != std::string::npos);
  CHECK(rl::logLevelNamed("WARNING") == rl::LogLevel::warn);
  CHECK(rl::logLevelNamed("Panic") == rl::LogLevel::error);
  CHECK_FALSE(rl::logLevelNamed("loud"));
}

TEST_CASE(
    "swl-ratelimit's health check fails once SIGTERM came, and, when a domain is needed, while the configuration "
    "in force has none") {
  rl::Health any(false);
  CHECK(rl::answerHealthCheck(any).status == 200);
  CHECK(rl::answerHealthCheck(any).body == "OK");
  any.loaded(0);
  CHECK(any.healthy());  // without HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED, no domain is needed
  any.stopping();
  CHECK(rl::answerHealthCheck(any).status == 500);
  CHECK(rl::answerHealthCheck(any).body.empty());

  rl::Health needs_a_domain(true);
  CHECK_FALSE(needs_a_domain.healthy());
  needs_a_domain.loaded(2);
  CHECK(needs_a_domain.healthy());
  needs_a_domain.loaded(0);  // a configuration of no domain put in force: unhealthy again
  CHECK_FALSE(needs_a_domain.healthy());
  needs_a_domain.loaded(1);
  needs_a_domain.stopping();
  CHECK_FALSE(needs_a_domain.healthy());
}

TEST_CASE(
    "/json answers a RateLimitRequest in JSON with the service's answer in JSON: 200 for OK, 429 for OVER_LIMIT, 400 "
    "for what is no request or a request refused") {
  rls::RateLimitRequest asked;
  const auto decide = [&](const rls::RateLimitRequest& request) {
    asked = request;
    rls::RateLimitResponse response;
    const bool over = request.descriptors(0).entries(0).value() == "over";
    response.set_overall_code(over ? rls::RateLimitResponse::OVER_LIMIT : rls::RateLimitResponse::OK);
    auto* status = response.add_statuses();
    status->set_code(response.overall_code());
    status->mutable_current_limit()->set_requests_per_unit(2);
    status->mutable_current_limit()->set_unit(rls::RateLimitResponse::RateLimit::MINUTE);
    status->set_limit_remaining(over ? 0 : 1);
    status->mutable_duration_until_reset()->set_seconds(58);
    return response;
  };
  const rl::HttpAnswer ok = rl::answerJson(
      R"({"domain":"shop","descriptors":[{"entries":[{"key":"user","value":"alice"}]}],"hitsAddend":2})", decide);
  CHECK(ok.status == 200);
  CHECK(ok.content_type == "application/json");
  CHECK(asked.domain() == "shop");
  CHECK(asked.hits_addend() == 2);
  CHECK(asked.descriptors(0).entries(0).value() == "alice");
  CHECK(ok.body ==
        R"({"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":2,"unit":"MINUTE"},)"
        R"("limitRemaining":1,"durationUntilReset":"58s"}]})");

  // Proto names are JSON names too; a default value (limitRemaining 0) is left out, as Go's protojson does.
  const rl::HttpAnswer over = rl::answerJson(
      R"({"domain":"shop","descriptors":[{"entries":[{"key":"user","value":"over"}],"hits_addend":0}]})", decide);
  CHECK(over.status == 429);
  CHECK(over.body.find(R"("overallCode":"OVER_LIMIT")") != std::string::npos);
  CHECK(over.body.find("limitRemaining") == std::string::npos);
  CHECK(asked.descriptors(0).has_hits_addend());

  for (const char* body : {"", "{", "[]", R"({"domain":"shop","colour":"blue"})", R"({"domain":7})"}) {
    INFO(body);
    const rl::HttpAnswer refused = rl::answerJson(body, decide);
    CHECK(refused.status == 400);
    CHECK(refused.body.find("not a RateLimitRequest in JSON") != std::string::npos);
  }
  const rl::HttpAnswer invalid =
      rl::answerJson(R"({"domain":""})", [](const rls::RateLimitRequest&) -> rls::RateLimitResponse {
        throw swl::InvalidArgument("swl-ratelimit: the request names no domain");
      });
  CHECK(invalid.status == 400);
  CHECK(invalid.body == "swl-ratelimit: the request names no domain\n");
  const rl::HttpAnswer unavailable =
      rl::answerJson(R"({"domain":"shop"})", [](const rls::RateLimitRequest&) -> rls::RateLimitResponse {
        throw swl::TimeoutError("redis 127.0.0.1:6379: no reply within 50 ms");
      });
  CHECK(unavailable.status == 503);
}

TEST_CASE("swl-ratelimit watches the directories its configuration's files are in, as envoyproxy/ratelimit's") {
  rl::ConfigSource source;
  source.path = "/etc/swl-ratelimit";
  auto watched = rl::watchedDirectories(source, true);
  REQUIRE(watched.size() == 1);
  CHECK(watched[0].directory == "/etc/swl-ratelimit");
  CHECK(watched[0].names.empty());

  // A file: its name in its directory, and the symlink a ConfigMap mount swaps.
  source.path = "/etc/swl-ratelimit.yaml";
  watched = rl::watchedDirectories(source, false);
  REQUIRE(watched.size() == 1);
  CHECK(watched[0].directory == "/etc");
  CHECK(watched[0].names == std::vector<std::string>{"swl-ratelimit.yaml", "..data"});

  source.runtime = rl::RuntimeDirectory{"/srv/runtime_data/current/", "ratelimit", "config", true, true};
  watched = rl::watchedDirectories(source, false);
  REQUIRE(watched.size() == 2);
  CHECK(watched[0].directory == "/srv/runtime_data/current/ratelimit/config");
  CHECK(watched[0].recursive);  // goruntime reads every file under it
  CHECK(watched[1].directory == "/srv/runtime_data");
  CHECK(watched[1].names == std::vector<std::string>{"current"});

  source.runtime->watch_root = false;
  CHECK(rl::watchedDirectories(source, false).size() == 1);
}

TEST_CASE(
    "swl-ratelimit's watcher reloads once a burst of changes has been quiet a while, and never later than a bound") {
  const Clock::time_point start{};
  using std::chrono::milliseconds;
  rl::Settling settling(milliseconds(200), milliseconds(2000));
  CHECK_FALSE(settling.due());
  settling.changed(start);
  CHECK(settling.due() == start + milliseconds(200));
  settling.changed(start + milliseconds(150));
  CHECK(settling.due() == start + milliseconds(350));
  for (int ms = 300; ms <= 3000; ms += 100) settling.changed(start + milliseconds(ms));
  CHECK(settling.due() == start + milliseconds(2000));  // a directory that never stops changing
  settling.reloaded();
  CHECK_FALSE(settling.due());
}

TEST_CASE(
    "swl-ratelimit's watcher sees a ConfigMap's update, a file written or removed, and the swap of a runtime root "
    "symlink") {
  TemporaryDirectory directory;
  rl::Log log({rl::LogLevel::error});
  std::atomic<int> reloads{0};
  const auto reloaded = [&](int at_least) { return eventually([&] { return reloads >= at_least; }); };

  ConfigMapMount mount(directory.path() / "mount", {{"config.yaml", shopRules(3)}});
  const auto root = directory.path() / "current";
  directory.write("v1/ratelimit/config/config.yaml", shopRules(3));
  std::filesystem::create_directory_symlink("v1", root);
  rl::ConfigurationWatcher configmap(
      {{directory.path() / "mount", false, {}}}, [&] { ++reloads; }, log);
  rl::ConfigurationWatcher runtime(
      {{root / "ratelimit" / "config", true, {}}, {directory.path(), false, {"current"}}}, [&] { ++reloads; }, log);

  mount.update({{"config.yaml", shopRules(7)}});
  CHECK(reloaded(1));
  directory.write("mount/extra.yaml", "domain: extra\n");
  CHECK(reloaded(2));
  std::filesystem::remove(directory.path() / "mount" / "extra.yaml");
  CHECK(reloaded(3));

  // A file written in a directory under the runtime's.
  directory.write("v1/ratelimit/config/more/limits.yaml", "domain: more\n");
  CHECK(reloaded(4));
  // The root swapped: `ln -s v2 tmp && mv -T tmp current`.
  directory.write("v2/ratelimit/config/config.yaml", shopRules(9));
  std::filesystem::create_directory_symlink("v2", directory.path() / "tmp");
  std::filesystem::rename(directory.path() / "tmp", root);
  CHECK(reloaded(5));
  // The tree behind the new root is watched from now on.
  directory.write("v2/ratelimit/config/config.yaml", shopRules(10));
  CHECK(reloaded(6));
}

TEST_CASE(
    "swl-ratelimit started with envoyproxy/ratelimit's environment alone serves gRPC, /healthcheck and /json from "
    "one configuration and one count") {
  TemporaryDirectory directory;
  RedisServer redis;
  ConfigMapMount mount(directory.path() / "runtime" / "ratelimit" / "config", {{"config.yaml", shopRules(3)}});
  RateLimitProcess server(directory.path() / "server.out", {},
                          envoyEnvironment(directory.path() / "runtime", redis.port()));
  INFO(server.output());
  CHECK(server.output().find("1 domain(s) from " + (directory.path() / "runtime/ratelimit/config").string()) !=
        std::string::npos);

  rls::RateLimitResponse response;
  REQUIRE(server.callStatus(request({{{"user", "alice"}}}), response).ok());
  CHECK(response.statuses(0).current_limit().requests_per_unit() == 3);
  CHECK(response.statuses(0).limit_remaining() == 2);

  httplib::Client http = server.http();
  const auto health = http.Get("/healthcheck");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(health->body == "OK");

  // alice's second and third hits through /json: the count the gRPC call began.
  const std::string alice = R"({"domain":"shop","descriptors":[{"entries":[{"key":"user","value":"alice"}]}]})";
  const auto second = http.Post("/json", alice, "application/json");
  REQUIRE(second);
  CHECK(second->status == 200);
  CHECK(second->get_header_value("Content-Type") == "application/json");
  CHECK(second->body.find(R"("limitRemaining":1)") != std::string::npos);
  const auto third = http.Post("/json", alice, "application/json");
  REQUIRE(third);
  CHECK(third->status == 200);
  const auto fourth = http.Post("/json", alice, "application/json");
  REQUIRE(fourth);
  CHECK(fourth->status == 429);
  CHECK(fourth->body.find(R"("overallCode":"OVER_LIMIT")") != std::string::npos);
  REQUIRE(server.callStatus(request({{{"user", "alice"}}}), response).ok());
  CHECK(response.overall_code() == rls::RateLimitResponse::OVER_LIMIT);

  const auto not_json = http.Post("/json", "{", "application/json");
  REQUIRE(not_json);
  CHECK(not_json->status == 400);
  const auto no_domain =
      http.Post("/json", R"({"descriptors":[{"entries":[{"key":"user","value":"x"}]}]})", "application/json");
  REQUIRE(no_domain);
  CHECK(no_domain->status == 400);
  CHECK(no_domain->body.find("no domain") != std::string::npos);
}

TEST_CASE(
    "swl-ratelimit reloads a ConfigMap's update under load with no call failed, and refuses a wrong file, keeping the "
    "limits in force") {
  TemporaryDirectory directory;
  RedisServer redis;
  ConfigMapMount mount(directory.path() / "runtime" / "ratelimit" / "config", {{"config.yaml", shopRules(3)}});
  RateLimitProcess server(directory.path() / "server.out", {},
                          envoyEnvironment(directory.path() / "runtime", redis.port()));
  INFO(server.output());
  CHECK(userLimit(server, "bob") == 3);
  CallsUnderway load(server);
  REQUIRE(eventually([&] { return load.calls() > 0; }));

  mount.update({{"config.yaml", shopRules(7)}});
  CHECK(eventually([&] { return userLimit(server, "bob") == 7; }));
  // The log says so once the new rules are in force: a moment after they answer.
  CHECK(eventually([&] { return server.count("configuration reloaded as its files changed, 1 domain(s)") >= 1; }));

  mount.update({{"config.yaml", kWrongRules}});
  CHECK(eventually([&] { return server.count("configuration kept as its files changed") >= 1; }));
  CHECK(server.output().find("config.yaml:4") != std::string::npos);
  CHECK(userLimit(server, "bob") == 7);

  const int calls_before = load.calls();
  CHECK(eventually([&] { return load.calls() > calls_before; }));
  load.stop();
  CHECK(load.failed() == 0);
}

TEST_CASE(
    "swl-ratelimit with RUNTIME_WATCH_ROOT=true reloads when the RUNTIME_ROOT symlink is swapped for another tree") {
  TemporaryDirectory directory;
  RedisServer redis;
  directory.write("v1/ratelimit/config/config.yaml", shopRules(3));
  std::filesystem::create_directory_symlink("v1", directory.path() / "current");
  auto environment = envoyEnvironment(directory.path() / "current", redis.port());
  for (auto& [name, value] : environment) {
    if (name == "RUNTIME_WATCH_ROOT") value = "true";
  }
  RateLimitProcess server(directory.path() / "server.out", {}, environment);
  INFO(server.output());
  CHECK(userLimit(server, "carol") == 3);

  directory.write("v2/ratelimit/config/config.yaml", shopRules(5));
  std::filesystem::create_directory_symlink("v2", directory.path() / "next");
  std::filesystem::rename(directory.path() / "next", directory.path() / "current");
  CHECK(eventually([&] { return userLimit(server, "carol") == 5; }));
}

TEST_CASE(
    "swl-ratelimit with HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED fails /healthcheck until a domain is in force, and "
    "after SIGTERM exits with status 0") {
  TemporaryDirectory directory;
  RedisServer redis;
  std::filesystem::create_directories(directory.path() / "runtime" / "ratelimit" / "config");
  auto environment = envoyEnvironment(directory.path() / "runtime", redis.port());
  environment.emplace_back("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "true");
  RateLimitProcess server(directory.path() / "server.out", {}, environment);
  INFO(server.output());
  httplib::Client http = server.http();
  const auto unhealthy = http.Get("/healthcheck");
  REQUIRE(unhealthy);
  CHECK(unhealthy->status == 500);

  directory.write("runtime/ratelimit/config/config.yaml", shopRules(3));
  CHECK(eventually([&] {
    const auto health = http.Get("/healthcheck");
    return health && health->status == 200;
  }));
  ::kill(server.pid(), SIGTERM);
  CHECK(server.waitForExit(std::chrono::seconds(20)) == 0);
}

TEST_CASE("swl-ratelimit stops at start on a setting of envoyproxy/ratelimit's it cannot apply, naming it") {
  TemporaryDirectory directory;
  swl::test::ChildProcess server;
  const auto output = directory.path() / "out";
  server.start({"env", "-i", "RUNTIME_ROOT=" + directory.path().string(), "RUNTIME_SUBDIRECTORY=ratelimit",
                "BACKEND_TYPE=memcache", "MEMCACHE_HOST_PORT=memcache:11211", std::getenv("SWL_RATELIMIT_SERVER")},
               output.string(), swl::test::ChildProcess::Errors::with_output);
  CHECK(server.waitForExit(std::chrono::seconds(20)) == 2);
  CHECK(swl::test::readFile(output).find(
            "swl-ratelimit: BACKEND_TYPE memcache: swl-ratelimit counts in Redis only; memcache is not supported") !=
        std::string::npos);
}

TEST_CASE("swl-ratelimit logs JSON lines with LOG_FORMAT=json, each setting it ignores among them") {
  TemporaryDirectory directory;
  RedisServer redis;
  ConfigMapMount mount(directory.path() / "runtime" / "ratelimit" / "config", {{"config.yaml", shopRules(3)}});
  auto environment = envoyEnvironment(directory.path() / "runtime", redis.port());
  environment.emplace_back("LOG_FORMAT", "json");
  environment.emplace_back("NEAR_LIMIT_RATIO", "0.9");
  RateLimitProcess server(directory.path() / "server.out", {}, environment);
  const std::string output = server.output();
  INFO(output);
  std::istringstream lines(output);
  int json_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    CHECK(line.rfind(R"({"@timestamp":")", 0) == 0);
    CHECK(line.back() == '}');
    ++json_lines;
  }
  CHECK(json_lines >= 2);
  CHECK(output.find(R"("level":"info","@message":"swl-ratelimit: ignored: NEAR_LIMIT_RATIO: )") != std::string::npos);
  CHECK(output.find(R"("@message":"swl-ratelimit: listening on 0.0.0.0:)") != std::string::npos);
}
