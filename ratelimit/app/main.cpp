// swl-ratelimit: Envoy's rate limit service (envoy.service.ratelimit.v3), deciding exactly with swl.
//
//   swl-ratelimit --config /etc/ratelimit/config --redis 127.0.0.1:6379 --listen 0.0.0.0:8081
//
// or, as a drop-in for envoyproxy/ratelimit, with its environment alone (RUNTIME_ROOT, REDIS_URL, ...).
// (`swl-ratelimit --help` lists every flag: settings/settings.cpp; docs/ratelimit.md, envoyproxy's variables.)
//
// SIGHUP reads the configuration again, and so does a change of its files when they are watched
// (reload/watcher.hpp): a file that is wrong is refused with its line, and the rules in force stay. SIGTERM and
// SIGINT fail the health check, then stop the server after the calls in progress.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/decide/decider.hpp>
#include <ratelimit/reload/reloader.hpp>
#include <ratelimit/reload/watcher.hpp>
#include <ratelimit/serve/grpc_server.hpp>
#include <ratelimit/serve/http.hpp>
#include <ratelimit/settings/address.hpp>
#include <ratelimit/settings/settings.hpp>
#include <ratelimit/telemetry/log.hpp>
#include <ratelimit/telemetry/metrics.hpp>

#include <swl/swl.hpp>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

int main(int argc, char** argv) {
  namespace rl = swl::ratelimit;
  const std::vector<std::string> arguments(argv + 1, argv + argc);
  if (arguments.size() == 1 && (arguments[0] == "--help" || arguments[0] == "-h")) {
    std::cout << rl::usageText();
    return 0;
  }
  rl::Settings settings;
  try {
    settings = rl::readSettings(arguments, [](const char* name) { return std::getenv(name); });
  } catch (const rl::SettingsError& error) {
    std::cerr << error.what() << "\n" << rl::usageText();
    return 2;
  }
  rl::Log log(settings.log);
  for (const std::string& ignored : settings.ignored) log.info("swl-ratelimit: ignored: " + ignored);
  std::unique_ptr<swl::RedisClient> redis;
  try {
    redis = rl::connectRedis(settings.redis);
  } catch (const swl::Error& error) {
    log.error(std::string("swl-ratelimit: ") + error.what());
    return 2;
  }
  // Signals are taken by one thread, with sigwait: every other thread, gRPC's, httplib's and the
  // watcher's included, blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  for (const int signal : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&signals, signal);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  rl::ConfigurationInForce in_force;
  rl::Health health(settings.healthy_only_with_a_domain);
  rl::Reloader reloader(settings.source, log, in_force,
                        [&health](const rl::Configuration& loaded) { health.loaded(loaded.domains().size()); });
  try {
    reloader.load();
  } catch (const swl::Error& error) {
    log.error(std::string("swl-ratelimit: ") + error.what());
    return 1;
  }

  rl::DecisionObservers observers;
  const auto registry = std::make_shared<prometheus::Registry>();
  swl::PrometheusMetrics decisions(*registry, "swl-ratelimit");
  rl::DescriptorMetrics descriptors(*registry);
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!settings.metrics.empty()) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(settings.metrics);
    } catch (const std::exception& error) {
      log.error("swl-ratelimit: cannot serve metrics on " + settings.metrics + ": " + error.what());
      return 1;
    }
    exposer->RegisterCollectable(registry, settings.metrics_path);
    observers.observer = decisions.observer();
    observers.on_descriptor = [&descriptors](std::string_view rule, rl::DescriptorOutcome outcome) {
      descriptors.count(rule, outcome);
    };
  }
  rl::Decider decider(*redis, settings.decider, std::move(observers));
  std::unique_ptr<rl::RateLimitServer> server;
  std::unique_ptr<rl::HttpEndpoints> http;
  try {
    // One thread per Redis connection (per master on a Cluster): a batch never waits for one.
    server = std::make_unique<rl::RateLimitServer>(decider, settings.redis.pool_size, in_force, settings.grpc, &health);
    if (!settings.http.empty()) {
      // /json answers as the gRPC service does: the same decider, the configuration in force.
      http = std::make_unique<rl::HttpEndpoints>(
          rl::addressOf(settings.http, "--http", rl::AddressOf::listener), health,
          [&decider, &in_force](const envoy::service::ratelimit::v3::RateLimitRequest& request) {
            const std::shared_ptr<const rl::Configuration> answering = in_force.get();
            return decider.decide(*answering, request);
          });
    }
  } catch (const swl::Error& error) {
    log.error(error.what());
    return 1;
  }
  std::unique_ptr<rl::ConfigurationWatcher> watcher;
  if (settings.watched()) {
    std::error_code unknown;  // a --config that is no directory now is watched as a file
    const bool config_is_directory =
        !settings.source.runtime && std::filesystem::is_directory(settings.source.path, unknown);
    try {
      watcher = std::make_unique<rl::ConfigurationWatcher>(
          rl::watchedDirectories(settings.source, config_is_directory),
          [&reloader] { reloader.reload("as its files changed"); }, log);
    } catch (const swl::Error& error) {
      log.error(error.what());
      return 1;
    }
  }

  if (exposer) {
    log.info("swl-ratelimit: metrics on " + rl::listeningOn(settings.metrics, exposer->GetListeningPorts().front()) +
             settings.metrics_path);
  }
  if (http) log.info("swl-ratelimit: HTTP (/healthcheck, /json) on " + rl::listeningOn(settings.http, http->port()));
  // The last line of the start, which scripts and tests wait for: everything above serves by now.
  log.info("swl-ratelimit: listening on " + rl::listeningOn(settings.grpc.listen, server->port()) + ", " +
           std::to_string(in_force.get()->domains().size()) + " domain(s) from " + rl::describe(settings.source) +
           (watcher ? ", watched" : ""));

  for (;;) {
    int signal = 0;
    sigwait(&signals, &signal);
    if (signal != SIGHUP) break;
    reloader.reload("on SIGHUP");
  }
  health.stopping();
  log.info("swl-ratelimit: stopping after the calls in progress");
  watcher.reset();  // no reload from now on
  server.reset();   // after the calls in progress
  http.reset();
  return 0;
}
