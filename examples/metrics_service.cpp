// A service whose rate limiter reports to Prometheus: simulated clients send requests through one
// SlidingWindowLimiter, and what it decided (swl_decisions_total, swl_errors_total,
// swl_decision_duration_seconds) is served on /metrics by prometheus-cpp's Exposer.
//
//   metrics_service --redis-port 6379 --port 9464 [--limit 5] [--window-ms 1000] [--clients 2]
//                   [--rate 50] [--seconds 0]
//
// --clients threads send --rate requests a second in all, for three users, each user limited to --limit
// per --window-ms. It fails open when Redis is down (the tier label shows it). It prints
// "metrics on http://127.0.0.1:PORT/metrics" once it serves, and runs for --seconds (0: until SIGINT or
// SIGTERM).

#include <swl/integrations/prometheus.hpp>
#include <swl/swl.hpp>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

struct Settings {
  int redis_port = 6379;
  int port = 9464;
  long limit = 5;
  long window_ms = 1000;
  long clients = 2;
  long rate = 50;
  long seconds = 0;
};

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 == argc) throw swl::InvalidArgument("metrics_service: " + std::string(flag) + " needs a value");
    const long value = std::stol(argv[++i]);
    if (flag == "--redis-port")
      settings.redis_port = static_cast<int>(value);
    else if (flag == "--port")
      settings.port = static_cast<int>(value);
    else if (flag == "--limit")
      settings.limit = value;
    else if (flag == "--window-ms")
      settings.window_ms = value;
    else if (flag == "--clients")
      settings.clients = value;
    else if (flag == "--rate")
      settings.rate = value;
    else if (flag == "--seconds")
      settings.seconds = value;
    else
      throw swl::InvalidArgument("metrics_service: unknown flag " + std::string(flag));
  }
  if (settings.clients < 1 || settings.rate < 1) {
    throw swl::InvalidArgument("metrics_service: --clients and --rate must be at least 1");
  }
  return settings;
}

// Set by SIGINT or SIGTERM; a lock-free atomic is safe to store to from a signal handler.
std::atomic<bool> stopping{false};

}  // namespace

int main(int argc, char** argv) try {
  const Settings settings = parse(argc, argv);

  auto registry = std::make_shared<prometheus::Registry>();
  swl::PrometheusMetrics metrics(*registry, "simulated");
  swl::LimiterOptions options;
  options.on_failure = swl::FailurePolicy::allow;
  options.observer = metrics.observer();

  // The client threads share the limiter: a ConnectionPool makes that safe.
  auto redis = swl::ConnectionPool::tcp("127.0.0.1", settings.redis_port);
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{settings.limit, std::chrono::milliseconds(settings.window_ms)},
                                      options);

  for (const int signal : {SIGINT, SIGTERM}) std::signal(signal, [](int) { stopping = true; });
  prometheus::Exposer exposer("127.0.0.1:" + std::to_string(settings.port));
  exposer.RegisterCollectable(registry);
  std::cout << "metrics on http://127.0.0.1:" << settings.port << "/metrics" << std::endl;

  const auto stop_at = std::chrono::steady_clock::now() + std::chrono::seconds(settings.seconds);
  const auto pause = std::chrono::microseconds(1'000'000 * settings.clients / settings.rate);
  std::vector<std::thread> clients;
  for (long client = 0; client < settings.clients; ++client) {
    clients.emplace_back([&, client] {
      for (long request = client; !stopping; request += settings.clients) {
        if (settings.seconds > 0 && std::chrono::steady_clock::now() >= stop_at) break;
        limiter.tryAcquire("user:" + std::to_string(request % 3));  // counted by the observer
        std::this_thread::sleep_for(pause);
      }
    });
  }
  for (std::thread& client : clients) client.join();
  return 0;
} catch (const std::exception& error) {
  std::cerr << "metrics_service: " << error.what() << "\n";
  return 1;
}
