// swl-ratelimit's rate beside swl's own in the same process: the same configuration, the same Redis and
// the same requests, decided once through the server over gRPC and once by the server's Decider called
// directly: the server as Envoy calls it (one thread, --in-flight calls in flight on one channel), the
// Decider as a service calls swl (a thread per call in flight). One JSON line per run.
//
//   ratelimit_service --mode service|in-process --config FILE --redis-port P [--server HOST:PORT]
//                     [--in-flight 16] [--requests 40000] [--keys 10000]

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/source.hpp>
#include <ratelimit/decide/decider.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <swl/swl.hpp>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace rls = envoy::service::ratelimit::v3;
using Clock = std::chrono::steady_clock;

struct Settings {
  std::string mode, config, server;
  int redis_port = 0, in_flight = 16, requests = 40000, keys = 10000;
};

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--mode")
      settings.mode = value;
    else if (flag == "--config")
      settings.config = value;
    else if (flag == "--server")
      settings.server = value;
    else if (flag == "--redis-port")
      settings.redis_port = std::atoi(value.c_str());
    else if (flag == "--in-flight")
      settings.in_flight = std::atoi(value.c_str());
    else if (flag == "--requests")
      settings.requests = std::atoi(value.c_str());
    else if (flag == "--keys")
      settings.keys = std::atoi(value.c_str());
    else {
      std::cerr << "ratelimit_service: unknown flag " << flag << "\n";
      std::exit(2);
    }
  }
  if ((settings.mode != "service" && settings.mode != "in-process") || settings.config.empty() ||
      settings.redis_port == 0 || (settings.mode == "service" && settings.server.empty())) {
    std::cerr << "usage: ratelimit_service --mode service|in-process --config FILE --redis-port P [--server HOST:PORT]"
                 " [--in-flight N] [--requests N] [--keys N]\n";
    std::exit(2);
  }
  return settings;
}

// The request Envoy would send for user `key`: one descriptor, as the workload of bench/README's tables.
rls::RateLimitRequest requestFor(int key) {
  rls::RateLimitRequest request;
  request.set_domain("bench");
  auto* entry = request.add_descriptors()->add_entries();
  entry->set_key("user");
  entry->set_value("u" + std::to_string(key));
  return request;
}

// As Envoy calls the server: one thread, --in-flight calls in flight on one channel (gRPC's async API).
void callServer(rls::RateLimitService::Stub& stub, const Settings& settings, std::vector<float>& latencies,
                std::atomic<int>& over, std::atomic<int>& failed) {
  struct Call {
    grpc::ClientContext context;
    rls::RateLimitResponse response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<rls::RateLimitResponse>> reader;
    Clock::time_point sent;
  };
  grpc::CompletionQueue queue;
  std::vector<std::unique_ptr<Call>> slots(settings.in_flight);
  int sent = 0, answered = 0;
  const auto send = [&](std::size_t slot) {
    slots[slot] = std::make_unique<Call>();
    Call& call = *slots[slot];
    call.sent = Clock::now();
    call.reader = stub.PrepareAsyncShouldRateLimit(&call.context, requestFor((sent++ * 7919) % settings.keys), &queue);
    call.reader->StartCall();
    call.reader->Finish(&call.response, &call.status, reinterpret_cast<void*>(slot));
  };
  for (std::size_t slot = 0; slot < slots.size() && sent < settings.requests; ++slot) send(slot);
  void* tag = nullptr;
  bool ok = false;
  while (answered < sent && queue.Next(&tag, &ok)) {
    const auto slot = reinterpret_cast<std::size_t>(tag);
    Call& call = *slots[slot];
    ++answered;
    latencies.push_back(std::chrono::duration<float, std::micro>(Clock::now() - call.sent).count());
    if (!ok || !call.status.ok()) ++failed;
    if (call.response.overall_code() == rls::RateLimitResponse::OVER_LIMIT) ++over;
    if (sent < settings.requests) send(slot);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  const auto configuration = swl::ratelimit::loadConfiguration(settings.config);
  swl::ConnectionPool redis([&] { return swl::Connection::tcp("127.0.0.1", settings.redis_port); },
                            swl::PoolOptions{static_cast<std::size_t>(settings.in_flight), std::chrono::seconds(5)});
  swl::ratelimit::Decider decider(redis, {});
  std::unique_ptr<rls::RateLimitService::Stub> stub;
  if (settings.mode == "service") {
    stub = rls::RateLimitService::NewStub(grpc::CreateChannel(settings.server, grpc::InsecureChannelCredentials()));
  }

  std::atomic<int> next{0}, over{0}, failed{0};
  std::vector<std::vector<float>> latencies(settings.in_flight);
  const auto started = Clock::now();
  if (settings.mode == "service") {
    callServer(*stub, settings, latencies.front(), over, failed);
  } else {
    // As a service calls swl: a thread per call in flight, each with a connection of the pool.
    std::vector<std::thread> threads;
    for (int t = 0; t < settings.in_flight; ++t) {
      threads.emplace_back([&, t] {
        for (int i = next++; i < settings.requests; i = next++) {
          const auto sent = Clock::now();
          const auto response = decider.decide(configuration, requestFor((i * 7919) % settings.keys));
          latencies[t].push_back(std::chrono::duration<float, std::micro>(Clock::now() - sent).count());
          if (response.overall_code() == rls::RateLimitResponse::OVER_LIMIT) ++over;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::vector<float> all;
  for (const auto& each : latencies) all.insert(all.end(), each.begin(), each.end());
  std::sort(all.begin(), all.end());
  std::printf(
      "{\"mode\":\"%s\",\"in_flight\":%d,\"decisions\":%zu,\"decisions_per_sec\":%.0f,\"p99_us\":%.1f,"
      "\"over_limit\":%d,\"failed\":%d}\n",
      settings.mode.c_str(), settings.in_flight, all.size(), all.size() / seconds,
      all.empty() ? 0.0 : all[std::min(all.size() - 1, all.size() * 99 / 100)], over.load(), failed.load());
  return failed == 0 ? 0 : 1;
}
