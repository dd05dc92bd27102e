// swl-ratelimit: Envoy's rate limit service (envoy.service.ratelimit.v3), deciding exactly with swl.
//
//   swl-ratelimit --config /etc/ratelimit/config --redis 127.0.0.1:6379 --listen 0.0.0.0:8081
//
// SIGHUP reads the configuration again: a file that is wrong is refused with its line, and the rules in
// force stay. SIGTERM and SIGINT stop the server after the calls in progress.

#include <ratelimit/config.hpp>
#include <ratelimit/decider.hpp>
#include <ratelimit/metrics.hpp>
#include <ratelimit/service.hpp>

#include <swl/swl.hpp>

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

namespace {

struct Settings {
  std::string listen = "0.0.0.0:8081";
  std::string redis_host = "127.0.0.1";
  int redis_port = 6379;
  std::filesystem::path config;
  swl::FailurePolicy on_failure = swl::FailurePolicy::allow;
  std::size_t pool_size = 8;
  std::string key_prefix = "swlrl";
  std::string metrics;  // HOST:PORT for /metrics; none when empty
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr
      << "swl-ratelimit: " << problem << "\n"
      << "usage: swl-ratelimit --config PATH [--listen HOST:PORT (0.0.0.0:8081)] [--redis HOST:PORT (127.0.0.1:6379)]\n"
      << "                     [--failure-mode open|closed (open)] [--pool-size N (8)] [--key-prefix P (swlrl)]\n"
      << "Each flag may also come from the environment: SWL_RATELIMIT_CONFIG, _LISTEN, _REDIS, _FAILURE_MODE,\n"
      << "_POOL_SIZE, _KEY_PREFIX; a flag wins over its variable.\n";
  std::exit(2);
}

void apply(Settings& settings, std::string_view flag, const std::string& value) {
  if (flag == "config") {
    settings.config = value;
  } else if (flag == "listen") {
    settings.listen = value;
  } else if (flag == "redis") {
    const auto colon = value.rfind(':');
    if (colon == std::string::npos) usage("--redis " + value + ": expected HOST:PORT");
    settings.redis_host = value.substr(0, colon);
    settings.redis_port = std::atoi(value.c_str() + colon + 1);
    if (settings.redis_port <= 0 || settings.redis_port > 65535) usage("--redis " + value + ": no port");
  } else if (flag == "failure-mode") {
    if (value != "open" && value != "closed") usage("--failure-mode " + value + ": expected open or closed");
    settings.on_failure = value == "open" ? swl::FailurePolicy::allow : swl::FailurePolicy::deny;
  } else if (flag == "pool-size") {
    const int size = std::atoi(value.c_str());
    if (size <= 0) usage("--pool-size " + value + ": expected a positive number");
    settings.pool_size = static_cast<std::size_t>(size);
  } else if (flag == "metrics") {
    settings.metrics = value;
  } else if (flag == "key-prefix") {
    if (value.empty()) usage("--key-prefix is empty");
    settings.key_prefix = value;
  } else {
    usage("unknown flag --" + std::string(flag));
  }
}

Settings parse(int argc, char** argv) {
  Settings settings;
  for (const char* flag : {"config", "listen", "redis", "failure-mode", "pool-size", "key-prefix", "metrics"}) {
    std::string variable = "SWL_RATELIMIT_" + std::string(flag);
    for (char& c : variable) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (const char* value = std::getenv(variable.c_str())) apply(settings, flag, value);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument.substr(0, 2) != "--" || i + 1 >= argc) usage("expected --flag value, got " + std::string(argument));
    apply(settings, argument.substr(2), argv[++i]);
  }
  if (settings.config.empty()) usage("no --config");
  return settings;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
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
  swl::ConnectionPool redis([&] { return swl::Connection::tcp(settings.redis_host, settings.redis_port); },
                            swl::PoolOptions{settings.pool_size, std::chrono::milliseconds(1000)});
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
  swl::ratelimit::Decider decider(redis, options);
  swl::ratelimit::RateLimitService service(decider, configuration);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(settings.listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  // Each call holds a gRPC thread while Redis answers. gRPC's sync server otherwise keeps at most two
  // idle threads and makes and ends threads as load comes and goes: keep enough for the pool's calls.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, static_cast<int>(settings.pool_size));
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              static_cast<int>(2 * settings.pool_size));
  const std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::cerr << "swl-ratelimit: cannot listen on " << settings.listen << "\n";
    return 1;
  }
  const std::string host = settings.listen.substr(0, settings.listen.rfind(':'));
  if (exposer) {
    const std::string metrics_host = settings.metrics.substr(0, settings.metrics.rfind(':'));
    std::cout << "swl-ratelimit: metrics on " << metrics_host << ":" << exposer->GetListeningPorts().front()
              << "/metrics" << std::endl;
  }
  std::cout << "swl-ratelimit: listening on " << host << ":" << port << ", " << configuration->domains().size()
            << " domain(s) from " << settings.config.string() << std::endl;

  std::thread signal_watch([&] {
    for (;;) {
      int signal = 0;
      sigwait(&signals, &signal);
      if (signal != SIGHUP) break;
      try {
        auto reloaded =
            std::make_shared<const swl::ratelimit::Configuration>(swl::ratelimit::loadConfiguration(settings.config));
        const auto domains = reloaded->domains().size();
        service.replace(std::move(reloaded));
        std::cout << "swl-ratelimit: configuration reloaded, " << domains << " domain(s)" << std::endl;
      } catch (const swl::Error& error) {
        std::cout << "swl-ratelimit: configuration kept: " << error.what() << std::endl;
      }
    }
    server->Shutdown();
  });
  server->Wait();
  signal_watch.join();
  return 0;
}
