// swl-ratelimit: Envoy's rate limit service (envoy.service.ratelimit.v3), deciding exactly with swl.
//
//   swl-ratelimit --config /etc/ratelimit/config --redis 127.0.0.1:6379 --listen 0.0.0.0:8081
//
// or, as a drop-in for envoyproxy/ratelimit, with its environment alone (RUNTIME_ROOT, REDIS_URL, ...).
// (`swl-ratelimit --help` lists every flag: settings/flags.cpp; docs/ratelimit.md, envoyproxy's variables.)
//
// SIGHUP reads the configuration again, and so does a change of its files when they are watched
// (reload/watcher.hpp): a file that is wrong is refused with its line, and the rules in force stay.
// SIGTERM and SIGINT fail the health check, then stop the server after the calls in progress.
//
// What follows only wires the parts together, in the order each needs those before it.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/source.hpp>
#include <ratelimit/decide/decider.hpp>
#include <ratelimit/reload/in_force.hpp>
#include <ratelimit/reload/reloader.hpp>
#include <ratelimit/reload/watcher.hpp>
#include <ratelimit/reload/xds/client.hpp>
#include <ratelimit/serve/grpc_server.hpp>
#include <ratelimit/serve/health.hpp>
#include <ratelimit/serve/http.hpp>
#include <ratelimit/settings/address.hpp>
#include <ratelimit/settings/settings.hpp>
#include <ratelimit/telemetry/log.hpp>
#include <ratelimit/telemetry/metrics.hpp>
#include <ratelimit/telemetry/statsd_stats.hpp>

#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace {

namespace rl = swl::ratelimit;

// Signals are taken by one thread, with sigwait: every other thread, gRPC's, httplib's and the
// watcher's included, blocks them, so they are blocked before any of those starts.
sigset_t blockSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (const int signal : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&signals, signal);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// The parts that serve, made in the order each needs those before it, and destroyed in the reverse
// order: the watcher and the xDS client first (no reload from then on), then the listeners, after the
// calls in progress. A part that cannot start throws swl::Error, whose message names it.
class Server {
 public:
  // The configuration read (from files) or asked for (from an xDS server), the metrics and the decider.
  Server(const rl::Settings& settings, swl::RedisClient& redis, rl::Log& log)
      : settings_(settings),
        health_(settings.healthy_only_with_a_domain),
        statsd_(settings.statsd.enabled() ? std::make_unique<rl::StatsdStats>(settings.statsd, &log) : nullptr),
        reloader_(
            settings.source, log, in_force_,
            [this](const rl::Configuration& loaded) { health_.loaded(loaded.domains().size()); },
            [this](bool put_in_force) {
              if (statsd_) statsd_->configurationLoaded(put_in_force);
            }) {
    try {
      reloader_.load();  // from an xDS server: none yet, every domain unknown
    } catch (const swl::Error& error) {
      throw swl::Error(std::string("swl-ratelimit: ") + error.what());
    }
    metrics_ = std::make_unique<rl::ServedMetrics>(settings.metrics, settings.metrics_path);
    decider_ = std::make_unique<rl::Decider>(
        redis, settings.decider,
        rl::bothOf(metrics_->observers(), statsd_ ? statsd_->observers() : rl::DecisionObservers()));
    if (settings.source.xds) {
      xds_ = std::make_unique<rl::xds::XdsClient>(*settings.source.xds, settings.source.merge_domains, reloader_, log);
    }
  }

  // Without FORCE_START_WITHOUT_INITIAL_CONFIG, the xDS server's first configuration is awaited before
  // anything listens, as envoyproxy/ratelimit awaits it; a signal to stop ends the wait: false then.
  bool awaitConfiguration(const sigset_t& signals, rl::Log& log) {
    if (!xds_ || settings_.source.xds->force_start) return true;
    log.info("swl-ratelimit: waiting for the configuration of the xDS server " + settings_.source.xds->server);
    const timespec at_once{0, 0};
    while (!xds_->waitUntilConfigured(std::chrono::milliseconds(200))) {
      const int signal = sigtimedwait(&signals, nullptr, &at_once);
      if (signal == SIGTERM || signal == SIGINT) return false;
    }
    return true;
  }

  // The listeners, and the watcher of the files.
  void listen(rl::Log& log) {
    // One thread per Redis connection (per master on a Cluster): a batch never waits for one.
    std::function<void(std::chrono::nanoseconds)> answered;
    if (statsd_) answered = [this](std::chrono::nanoseconds took) { statsd_->callAnswered(took); };
    grpc_ = std::make_unique<rl::RateLimitServer>(*decider_, settings_.redis.pool_size, in_force_, settings_.grpc,
                                                  &health_, std::move(answered));
    if (!settings_.http.empty()) startHttp();
    if (settings_.watched()) startWatcher(log);
  }

  // What serves where, for the log; its last line, which scripts and tests wait for, comes once
  // everything serves.
  void announce(rl::Log& log) const {
    if (metrics_->port() != 0) {
      log.info("swl-ratelimit: metrics on " + rl::listeningOn(settings_.metrics, metrics_->port()) +
               settings_.metrics_path);
    }
    if (http_)
      log.info("swl-ratelimit: HTTP (/healthcheck, /json) on " + rl::listeningOn(settings_.http, http_->port()));
    if (statsd_) {
      log.info("swl-ratelimit: statsd to " + rl::joinHostPort(settings_.statsd.host, settings_.statsd.port) +
               " every " + std::to_string(settings_.statsd.flush_interval.count()) + " ms");
    }
    log.info("swl-ratelimit: listening on " + rl::listeningOn(settings_.grpc.listen, grpc_->port()) + ", " +
             std::to_string(in_force_.get()->domains().size()) + " domain(s) from " + rl::describe(settings_.source) +
             (watcher_ ? ", watched" : ""));
  }

  // Serves until SIGTERM or SIGINT, reloading on each SIGHUP; then fails the health check.
  void serveUntilStopped(const sigset_t& signals) {
    for (;;) {
      int signal = 0;
      sigwait(&signals, &signal);
      if (signal != SIGHUP) break;
      reloader_.reload("on SIGHUP");
    }
    health_.stopping();
  }

 private:
  // /json answers as the gRPC service does: the same decider, the configuration in force.
  void startHttp() {
    http_ =
        std::make_unique<rl::HttpEndpoints>(rl::addressOf(settings_.http, "--http", rl::AddressOf::listener), health_,
                                            [this](const envoy::service::ratelimit::v3::RateLimitRequest& request) {
                                              return decider_->decide(*in_force_.get(), request);
                                            });
  }

  void startWatcher(rl::Log& log) {
    std::error_code unknown;  // a --config that is no directory now is watched as a file
    const bool config_is_directory =
        !settings_.source.runtime && std::filesystem::is_directory(settings_.source.path, unknown);
    watcher_ = std::make_unique<rl::ConfigurationWatcher>(
        rl::watchedDirectories(settings_.source, config_is_directory),
        [this] { reloader_.reload("as its files changed"); }, log);
  }

  const rl::Settings& settings_;
  rl::ConfigurationInForce in_force_;
  rl::Health health_;
  std::unique_ptr<rl::StatsdStats> statsd_;  // before what counts on it, so that it is destroyed after
  rl::Reloader reloader_;
  std::unique_ptr<rl::ServedMetrics> metrics_;
  std::unique_ptr<rl::Decider> decider_;
  std::unique_ptr<rl::HttpEndpoints> http_;
  std::unique_ptr<rl::RateLimitServer> grpc_;
  std::unique_ptr<rl::xds::XdsClient> xds_;
  std::unique_ptr<rl::ConfigurationWatcher> watcher_;
};

}  // namespace

int main(int argc, char** argv) {
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
  const sigset_t signals = blockSignals();
  std::unique_ptr<Server> server;
  try {
    server = std::make_unique<Server>(settings, *redis, log);
    if (!server->awaitConfiguration(signals, log)) {
      log.info("swl-ratelimit: stopped before the xDS server's configuration came");
      return 0;
    }
    server->listen(log);
  } catch (const swl::Error& error) {
    log.error(error.what());
    return 1;
  }
  server->announce(log);
  server->serveUntilStopped(signals);
  log.info("swl-ratelimit: stopping after the calls in progress");
  server.reset();
  return 0;
}
