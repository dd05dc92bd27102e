// swl-ratelimit: Envoy's rate limit service (envoy.service.ratelimit.v3), deciding exactly with swl.
//
//   swl-ratelimit --config /etc/ratelimit/config --redis 127.0.0.1:6379 --listen 0.0.0.0:8081
//
// (`swl-ratelimit --help` lists every flag: settings.cpp.)
//
// SIGHUP reads the configuration again: a file that is wrong is refused with its line, and the rules in
// force stay. SIGTERM and SIGINT stop the server after the calls in progress.

#include <ratelimit/config.hpp>
#include <ratelimit/decider.hpp>
#include <ratelimit/metrics.hpp>
#include <ratelimit/service.hpp>
#include <ratelimit/settings.hpp>

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

int main(int argc, char** argv) {
  const std::vector<std::string> arguments(argv + 1, argv + argc);
  if (arguments.size() == 1 && (arguments[0] == "--help" || arguments[0] == "-h")) {
    std::cout << swl::ratelimit::usageText();
    return 0;
  }
  swl::ratelimit::Settings settings;
  std::unique_ptr<swl::RedisClient> redis;
  try {
    settings = swl::ratelimit::readSettings(arguments, [](const char* name) { return std::getenv(name); });
    redis = swl::ratelimit::connectRedis(settings.redis);
  } catch (const swl::ratelimit::SettingsError& error) {
    std::cerr << error.what() << "\n" << swl::ratelimit::usageText();
    return 2;
  } catch (const swl::Error& error) {
    std::cerr << "swl-ratelimit: " << error.what() << "\n";
    return 2;
  }
  // Signals are taken by one thread, with sigwait: every other thread, gRPC's included, blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  for (const int signal : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&signals, signal);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::shared_ptr<const swl::ratelimit::Configuration> configuration;
  try {
    configuration =
        std::make_shared<const swl::ratelimit::Configuration>(swl::ratelimit::loadConfiguration(settings.config));
  } catch (const swl::Error& error) {
    std::cerr << "swl-ratelimit: " << error.what() << "\n";
    return 1;
  }
  swl::ratelimit::DeciderOptions options{settings.key_prefix, settings.on_failure, {}, {}};
  const auto registry = std::make_shared<prometheus::Registry>();
  swl::PrometheusMetrics decisions(*registry, "swl-ratelimit");
  swl::ratelimit::DescriptorMetrics descriptors(*registry);
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!settings.metrics.empty()) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(settings.metrics);
    } catch (const std::exception& error) {
      std::cerr << "swl-ratelimit: cannot serve metrics on " << settings.metrics << ": " << error.what() << "\n";
      return 1;
    }
    exposer->RegisterCollectable(registry);
    options.observer = decisions.observer();
    options.on_descriptor = [&descriptors](std::string_view rule, swl::ratelimit::DescriptorOutcome outcome) {
      descriptors.count(rule, outcome);
    };
  }
  swl::ratelimit::Decider decider(*redis, options);
  std::unique_ptr<swl::ratelimit::RateLimitServer> server;
  try {
    // One thread per Redis connection (per master on a Cluster): a batch never waits for one.
    server = std::make_unique<swl::ratelimit::RateLimitServer>(decider, settings.redis.pool_size, configuration,
                                                               settings.listen);
  } catch (const swl::Error& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
  const std::string host = settings.listen.substr(0, settings.listen.rfind(':'));
  if (exposer) {
    const std::string metrics_host = settings.metrics.substr(0, settings.metrics.rfind(':'));
    std::cout << "swl-ratelimit: metrics on " << metrics_host << ":" << exposer->GetListeningPorts().front()
              << "/metrics" << std::endl;
  }
  std::cout << "swl-ratelimit: listening on " << host << ":" << server->port() << ", "
            << configuration->domains().size() << " domain(s) from " << settings.config.string() << std::endl;

  for (;;) {
    int signal = 0;
    sigwait(&signals, &signal);
    if (signal != SIGHUP) break;
    try {
      auto reloaded =
          std::make_shared<const swl::ratelimit::Configuration>(swl::ratelimit::loadConfiguration(settings.config));
      const auto domains = reloaded->domains().size();
      server->replace(std::move(reloaded));
      std::cout << "swl-ratelimit: configuration reloaded, " << domains << " domain(s)" << std::endl;
    } catch (const swl::Error& error) {
      std::cout << "swl-ratelimit: configuration kept: " << error.what() << std::endl;
    }
  }
  server.reset();  // after the calls in progress
  return 0;
}
