// A gRPC service behind swl (swl/integrations/grpc.hpp): every call of swl.example.Greeter is limited per
// method and per caller before its handler works. The caller is the x-api-key metadata entry, or the peer's
// address when a call has none. A refused call ends RESOURCE_EXHAUSTED with a google.rpc.RetryInfo detail
// and the retry-after, ratelimit-policy and ratelimit trailers.
//
//   grpc_service --redis-port 6379 --port 50051 [--hello-limit 5] [--search-limit 2] [--window-s 10]
//                [--fail-closed] [--command-timeout-ms 50]   (swl's default; a loaded machine may want more)
//
// Redis down: calls are admitted, unlimited (fail open), unless --fail-closed refuses them (UNAVAILABLE).
// It prints "listening on 127.0.0.1:PORT" once it serves, and runs until SIGINT or SIGTERM.

#include <swl/integrations/grpc.hpp>
#include <swl/swl.hpp>

#include <grpcpp/grpcpp.h>

#include "greeter.grpc.pb.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

namespace {

struct Settings {
  int redis_port = 6379;
  int port = 50051;
  long hello_limit = 5;
  long search_limit = 2;
  long window_seconds = 10;
  bool fail_closed = false;
  swl::ConnectionOptions redis;  // swl's defaults unless the flags say otherwise
};

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--fail-closed") {
      settings.fail_closed = true;
      continue;
    }
    if (i + 1 == argc) throw swl::InvalidArgument("grpc_service: " + std::string(flag) + " needs a value");
    const long value = std::stol(argv[++i]);
    if (flag == "--redis-port")
      settings.redis_port = static_cast<int>(value);
    else if (flag == "--port")
      settings.port = static_cast<int>(value);
    else if (flag == "--hello-limit")
      settings.hello_limit = value;
    else if (flag == "--search-limit")
      settings.search_limit = value;
    else if (flag == "--window-s")
      settings.window_seconds = value;
    else if (flag == "--command-timeout-ms")
      settings.redis.command_timeout = std::chrono::milliseconds(value);
    else
      throw swl::InvalidArgument("grpc_service: unknown flag " + std::string(flag));
  }
  return settings;
}

using Gate = swl::grpc::CallGate<swl::SlidingWindowLimiter<>>;

class Greeter final : public swl::example::Greeter::Service {
 public:
  explicit Greeter(const Gate& gate) : gate_(gate) {}

  ::grpc::Status Hello(::grpc::ServerContext* context, const swl::example::Words* request,
                       swl::example::Words* reply) override {
    if (auto refused = gate_.refusal(*context)) return *refused;
    reply->set_text("hello " + request->text());
    return ::grpc::Status::OK;
  }

  ::grpc::Status Search(::grpc::ServerContext* context, const swl::example::Words* request,
                        swl::example::Words* reply) override {
    if (auto refused = gate_.refusal(*context)) return *refused;
    reply->set_text("results for " + request->text());
    return ::grpc::Status::OK;
  }

 private:
  const Gate& gate_;
};

}  // namespace

int main(int argc, char** argv) try {
  const Settings settings = parse(argc, argv);
  // Stopped by SIGINT or SIGTERM, taken by sigwait below: blocked before gRPC starts its threads, which
  // inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // gRPC serves from a thread pool: a ConnectionPool lets those threads share the limiter.
  auto redis = swl::ConnectionPool::tcp("127.0.0.1", settings.redis_port, swl::PoolOptions{}, settings.redis);
  swl::LimiterOptions options;
  options.on_failure = settings.fail_closed ? swl::FailurePolicy::deny : swl::FailurePolicy::allow;
  const std::chrono::seconds window(settings.window_seconds);
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{settings.hello_limit, window}, options);
  Gate gate(limiter, {{"/swl.example.Greeter/Search", swl::Limit{settings.search_limit, window}}}, "x-api-key");
  Greeter greeter(gate);

  ::grpc::ServerBuilder builder;
  const std::string address = "127.0.0.1:" + std::to_string(settings.port);
  builder.AddListeningPort(address, ::grpc::InsecureServerCredentials());
  builder.RegisterService(&greeter);
  builder.experimental().SetInterceptorCreators(gate.interceptorFactories());
  const std::unique_ptr<::grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::cerr << "grpc_service: cannot listen on " << address << "\n";
    return 1;
  }
  std::cout << "listening on " << address << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  // Calls in flight get a second; connected clients do not hold the server up (without a deadline,
  // Shutdown waits until every client has closed its connection).
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
} catch (const std::exception& error) {
  std::cerr << "grpc_service: " << error.what() << "\n";
  return 1;
}
