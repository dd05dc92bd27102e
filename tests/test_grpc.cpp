// swl/integrations/grpc.hpp with real gRPC clients over loopback: a Greeter (examples/grpc_service's proto)
// served in this process behind a CallGate on a manual clock, and examples/grpc_service itself (its path in
// SWL_GRPC_SERVICE), each in front of a private redis-server. The status details are decoded by protobuf's
// own parser (tests/support/rpc_status.proto), not by the encoder under test.

#include <swl/integrations/grpc.hpp>
#include <swl/swl.hpp>

#include "support/child_process.hpp"
#include "support/redis_server.hpp"

#include <grpcpp/grpcpp.h>

#include "greeter.grpc.pb.h"
#include "rpc_status.pb.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::RedisServer;

namespace {

constexpr const char* kHello = "/swl.example.Greeter/Hello";
constexpr const char* kSearch = "/swl.example.Greeter/Search";

using Gate = swl::grpc::CallGate<swl::SlidingWindowLimiter<>>;

// The Greeter whose handlers ask the gate first (unless told not to) and count the calls they serve.
class CountingGreeter final : public swl::example::Greeter::Service {
 public:
  CountingGreeter(const Gate& gate, bool asks_gate) : gate_(gate), asks_gate_(asks_gate) {}

  ::grpc::Status Hello(::grpc::ServerContext* context, const swl::example::Words* request,
                       swl::example::Words* reply) override {
    return serve(*context, *request, *reply);
  }
  ::grpc::Status Search(::grpc::ServerContext* context, const swl::example::Words* request,
                        swl::example::Words* reply) override {
    return serve(*context, *request, *reply);
  }

  int served() const { return served_.load(); }

 private:
  ::grpc::Status serve(const ::grpc::ServerContext& context, const swl::example::Words& request,
                       swl::example::Words& reply) {
    if (asks_gate_) {
      if (auto refused = gate_.refusal(context)) return *refused;
    }
    served_.fetch_add(1);
    reply.set_text("hello " + request.text());
    return ::grpc::Status::OK;
  }

  const Gate& gate_;
  bool asks_gate_;
  std::atomic<int> served_{0};
};

// What a client saw of one call.
struct Answer {
  ::grpc::Status status;
  std::multimap<std::string, std::string> trailers;
  std::string text;

  std::string trailer(const std::string& name) const {
    REQUIRE(trailers.count(name) == 1);
    return trailers.find(name)->second;
  }
};

// A channel to 127.0.0.1:port, connected, and calls on it with a patient deadline (a loaded machine).
class Client {
 public:
  explicit Client(int port)
      : channel_(::grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), ::grpc::InsecureChannelCredentials(),
                                             quickReconnects())),
        stub_(swl::example::Greeter::NewStub(channel_)) {}

  bool connected(std::chrono::seconds patience) {
    return channel_->WaitForConnected(std::chrono::system_clock::now() + patience);
  }

  Answer call(const std::string& method, std::optional<std::string> api_key = std::nullopt) {
    ::grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 30s);
    if (api_key) context.AddMetadata("x-api-key", *api_key);
    swl::example::Words request, reply;
    request.set_text("swl");
    Answer answer;
    answer.status =
        method == kHello ? stub_->Hello(&context, request, &reply) : stub_->Search(&context, request, &reply);
    for (const auto& [name, value] : context.GetServerTrailingMetadata()) {
      answer.trailers.emplace(std::string(name.data(), name.size()), std::string(value.data(), value.size()));
    }
    answer.text = reply.text();
    return answer;
  }

 private:
  // A service still starting refuses the first connects; gRPC's default backoff would wait a second or more
  // before the next.
  static ::grpc::ChannelArguments quickReconnects() {
    ::grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
    arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
    arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
    return arguments;
  }

  std::shared_ptr<::grpc::Channel> channel_;
  std::unique_ptr<swl::example::Greeter::Stub> stub_;
};

// A CountingGreeter behind `gate` on a free loopback port, shut down at the end of the test.
class GreeterServer {
 public:
  explicit GreeterServer(Gate& gate, bool handlers_ask_gate = true) : greeter_(gate, handlers_ask_gate) {
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", ::grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&greeter_);
    builder.experimental().SetInterceptorCreators(gate.interceptorFactories());
    server_ = builder.BuildAndStart();
    REQUIRE(server_);
    REQUIRE(port_ > 0);
  }
  ~GreeterServer() { server_->Shutdown(std::chrono::system_clock::now() + 5s); }

  Client client() {
    Client client(port_);
    REQUIRE(client.connected(30s));
    return client;
  }
  int served() const { return greeter_.served(); }

 private:
  CountingGreeter greeter_;
  int port_ = 0;
  std::unique_ptr<::grpc::Server> server_;
};

// The retry_delay of the one RetryInfo in a refusal's details, decoded as any gRPC client would.
std::chrono::microseconds retryDelayOf(const ::grpc::Status& status) {
  google::rpc::Status details;
  REQUIRE(details.ParseFromString(status.error_details()));
  CHECK(details.code() == static_cast<int>(status.error_code()));
  CHECK(details.message() == status.error_message());
  REQUIRE(details.details_size() == 1);
  CHECK(details.details(0).type_url() == "type.googleapis.com/google.rpc.RetryInfo");
  google::rpc::RetryInfo retry_info;
  REQUIRE(details.details(0).UnpackTo(&retry_info));
  return std::chrono::seconds(retry_info.retry_delay().seconds()) +
         std::chrono::microseconds(retry_info.retry_delay().nanos() / 1000);
}

// Keeps the last decision the limiter handed out and every error it met.
struct Seen {
  std::mutex mutex;
  std::optional<swl::Decision> decision;
  std::vector<swl::Tier> failures;  // the tier that answered a call Redis did not

  swl::Observer observer() {
    return [this](const swl::DecisionEvent& event) {
      const std::lock_guard<std::mutex> lock(mutex);
      if (event.decision != nullptr) decision = *event.decision;
      if (event.error != nullptr) failures.push_back(event.tier);
    };
  }
};

swl::LimiterOptions onManualClock(const swl::testing::ManualClock& clock, Seen& seen) {
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  options.observer = seen.observer();
  return options;
}

// A CountingGreeter behind a gate, its limiter on a manual clock over a private redis-server, and a client
// connected to it: where most tests start.
struct GatedGreeter {
  explicit GatedGreeter(swl::Limit limit, std::map<std::string, swl::Limit, std::less<>> method_limits = {},
                        std::string key_metadata = {}, bool handlers_ask_gate = true)
      : limiter(connection, limit, onManualClock(clock, seen)),
        gate(limiter, std::move(method_limits), std::move(key_metadata)),
        server(gate, handlers_ask_gate),
        client(server.client()) {}

  RedisServer redis;
  swl::Connection connection = redis.connect();
  swl::testing::ManualClock clock;
  Seen seen;
  swl::SlidingWindowLimiter<> limiter;
  Gate gate;
  GreeterServer server;
  Client client;
};

}  // namespace

TEST_CASE("calls past their method's limit end RESOURCE_EXHAUSTED with the exact wait as RetryInfo and trailers") {
  GatedGreeter greeter(swl::Limit{3, 10s});

  const std::vector<std::string> remaining{R"("/swl.example.Greeter/Hello";r=2;t=10)",
                                           R"("/swl.example.Greeter/Hello";r=1;t=10)",
                                           R"("/swl.example.Greeter/Hello";r=0;t=10)"};
  for (const std::string& rate_limit : remaining) {
    const Answer admitted = greeter.client.call(kHello);
    CHECK(admitted.status.error_code() == ::grpc::StatusCode::OK);
    CHECK(admitted.text == "hello swl");
    CHECK(admitted.trailer("ratelimit-policy") == R"("/swl.example.Greeter/Hello";q=3;w=10)");
    CHECK(admitted.trailer("ratelimit") == rate_limit);
    CHECK(admitted.trailers.count("retry-after") == 0);
    greeter.clock.advance(1250ms);
  }
  // Now 3.75 s after the first call, which leaves the window in 6.25 s; the last leaves it in 8.75 s.
  const Answer refused = greeter.client.call(kHello);
  CHECK(refused.status.error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(refused.status.error_message() ==
        "swl: /swl.example.Greeter/Hello allows 3 calls per 10s per caller; retry in 7s");
  CHECK(refused.text.empty());
  CHECK(greeter.server.served() == 3);  // the refused call's handler returned at its first line
  REQUIRE(greeter.seen.decision);
  CHECK_FALSE(greeter.seen.decision->allowed);
  CHECK(greeter.seen.decision->retry_after == 6250ms);
  CHECK(retryDelayOf(refused.status) == greeter.seen.decision->retry_after);
  CHECK(refused.trailer("retry-after") == "7");
  CHECK(refused.trailer("ratelimit-policy") == R"("/swl.example.Greeter/Hello";q=3;w=10)");
  CHECK(refused.trailer("ratelimit") == R"("/swl.example.Greeter/Hello";r=0;t=9)");

  // Once the wait has passed, the next call is admitted.
  greeter.clock.advance(6250ms);
  CHECK(greeter.client.call(kHello).status.error_code() == ::grpc::StatusCode::OK);
}

TEST_CASE("each method is decided under its own limit, and one method's calls leave another's untouched") {
  GatedGreeter greeter(swl::Limit{3, 10s}, {{kSearch, swl::Limit{1, 2s}}});

  CHECK(greeter.gate.limitOf(kSearch) == swl::Limit{1, 2s});
  CHECK(greeter.gate.limitOf(kHello) == swl::Limit{3, 10s});
  const Answer searched = greeter.client.call(kSearch);
  CHECK(searched.status.error_code() == ::grpc::StatusCode::OK);
  CHECK(searched.trailer("ratelimit-policy") == R"("/swl.example.Greeter/Search";q=1;w=2)");
  const Answer refused = greeter.client.call(kSearch);
  CHECK(refused.status.error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(refused.status.error_message() ==
        "swl: /swl.example.Greeter/Search allows 1 calls per 2s per caller; retry in 2s");
  CHECK(retryDelayOf(refused.status) == 2s);
  for (int call = 0; call < 3; ++call) CHECK(greeter.client.call(kHello).status.error_code() == ::grpc::StatusCode::OK);
  CHECK(greeter.client.call(kHello).status.error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(greeter.server.served() == 4);
}

TEST_CASE("a call is keyed by its x-api-key entry when it carries one, else by its peer's address") {
  GatedGreeter greeter(swl::Limit{1, 10s}, {}, "x-api-key");

  CHECK(greeter.client.call(kHello, "alice").status.error_code() == ::grpc::StatusCode::OK);
  CHECK(greeter.client.call(kHello, "alice").status.error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(greeter.client.call(kHello, "bob").status.error_code() == ::grpc::StatusCode::OK);
  CHECK(greeter.client.call(kHello).status.error_code() == ::grpc::StatusCode::OK);
  CHECK(greeter.client.call(kHello, "").status.error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED);  // an empty key
  // Another connection comes from another port of the same address: the same caller.
  Client other = greeter.server.client();
  CHECK(other.call(kHello).status.error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(greeter.limiter.peek("/swl.example.Greeter/Hello:alice").used == 1);
  CHECK(greeter.limiter.peek("/swl.example.Greeter/Hello:bob").used == 1);
  CHECK(greeter.limiter.peek("/swl.example.Greeter/Hello:ipv4:127.0.0.1").used == 1);
}

TEST_CASE("a paused Redis: fail open admits calls without RateLimit trailers, fail closed refuses UNAVAILABLE") {
  RedisServer redis;
  swl::ConnectionOptions bounded = swl::test::patient();
  bounded.command_timeout = 1s;  // what a paused Redis costs a call; patient with a loaded machine
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", redis.port(), swl::PoolOptions{4, 5s}, bounded);
  Seen seen_open, seen_closed;
  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  fail_open.observer = seen_open.observer();
  swl::LimiterOptions fail_closed;
  fail_closed.on_failure = swl::FailurePolicy::deny;
  fail_closed.observer = seen_closed.observer();
  swl::SlidingWindowLimiter<> open_limiter(pool, swl::Limit{5, 10s}, fail_open);
  swl::SlidingWindowLimiter<> closed_limiter(pool, swl::Limit{5, 10s}, fail_closed);
  Gate open_gate(open_limiter), closed_gate(closed_limiter);
  GreeterServer open_server(open_gate), closed_server(closed_gate);
  Client open_client = open_server.client(), closed_client = closed_server.client();
  REQUIRE(open_client.call(kHello).trailers.count("ratelimit") == 1);
  REQUIRE(closed_client.call(kHello).status.error_code() == ::grpc::StatusCode::OK);

  redis.pause();
  const Answer admitted = open_client.call(kHello);
  const Answer refused = closed_client.call(kHello);
  redis.resume();

  CHECK(admitted.status.error_code() == ::grpc::StatusCode::OK);
  CHECK(admitted.text == "hello swl");
  CHECK(admitted.trailers.count("ratelimit") == 0);
  CHECK(admitted.trailers.count("ratelimit-policy") == 0);
  CHECK(seen_open.failures == std::vector<swl::Tier>{swl::Tier::fail_open});
  CHECK(refused.status.error_code() == ::grpc::StatusCode::UNAVAILABLE);
  CHECK(refused.status.error_message() == "swl: the rate limiter could not decide; refused (fail closed)");
  CHECK(refused.status.error_details().empty());
  CHECK(refused.trailers.count("retry-after") == 0);
  CHECK(seen_closed.failures == std::vector<swl::Tier>{swl::Tier::fail_closed});
  CHECK(open_server.served() == 2);
  CHECK(closed_server.served() == 1);

  // Redis back: decided by Redis again (a resumed server may take a moment on a loaded machine).
  const auto patience = std::chrono::steady_clock::now() + 10s;
  while (open_client.call(kHello).trailers.count("ratelimit") == 0 && std::chrono::steady_clock::now() < patience) {
    std::this_thread::sleep_for(20ms);
  }
  CHECK(open_client.call(kHello).trailers.count("ratelimit") == 1);
}

TEST_CASE(
    "a handler that does not ask the gate does its work, but its call is refused on the wire, its reply emptied") {
  GatedGreeter greeter(swl::Limit{1, 10s}, {}, {}, /*handlers_ask_gate=*/false);

  CHECK(greeter.client.call(kHello).status.error_code() == ::grpc::StatusCode::OK);
  const Answer refused = greeter.client.call(kHello);
  CHECK(refused.status.error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(refused.text.empty());  // the reply travels, emptied
  CHECK(retryDelayOf(refused.status) == 10s);
  CHECK(refused.trailer("retry-after") == "10");
  CHECK(greeter.server.served() == 2);
}

TEST_CASE("a gate refuses configuration gRPC or the limiter cannot serve") {
  RedisServer redis;
  auto connection = redis.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{3, 10s});
  CHECK_THROWS_AS(Gate(limiter, {{"", swl::Limit{1, 1s}}}), swl::InvalidArgument);
  CHECK_THROWS_AS(Gate(limiter, {{"Hello", swl::Limit{1, 1s}}}), swl::InvalidArgument);
  CHECK_THROWS_AS(Gate(limiter, {{"/swl.example.Greeter/", swl::Limit{1, 1s}}}), swl::InvalidArgument);
  CHECK_THROWS_AS(Gate(limiter, {{kHello, swl::Limit{0, 1s}}}), swl::InvalidArgument);
  CHECK_THROWS_AS(Gate(limiter, {}, "X-Api-Key"), swl::InvalidArgument);
  CHECK_NOTHROW(Gate(limiter, {{kHello, swl::Limit{1, 1s}}}, "x-api-key"));
}

TEST_CASE("examples/grpc_service answers a real client with exact statuses, details and trailers, and fails open") {
  const char* path = std::getenv("SWL_GRPC_SERVICE");
  REQUIRE(path != nullptr);
  RedisServer redis;
  const int port = RedisServer::freeLoopbackPort();
  swl::test::ChildProcess service;
  service.start({path, "--redis-port", std::to_string(redis.port()), "--port", std::to_string(port), "--hello-limit",
                 "2", "--search-limit", "1", "--window-s", "10",
                 // patient with a loaded machine: a slow answer would fail open and spoil the exact sequence
                 "--command-timeout-ms", "1000"});
  Client client(port);
  const auto give_up_at = std::chrono::steady_clock::now() + 30s;
  while (!client.connected(1s)) {
    REQUIRE(service.alive());
    REQUIRE(std::chrono::steady_clock::now() < give_up_at);
  }

  CHECK(client.call(kHello).text == "hello swl");
  CHECK(client.call(kHello).status.error_code() == ::grpc::StatusCode::OK);
  const Answer refused = client.call(kHello);
  CHECK(refused.status.error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  const std::chrono::microseconds delay = retryDelayOf(refused.status);
  CHECK(delay > 0s);
  CHECK(delay <= 10s);
  CHECK(refused.trailer("retry-after") == std::to_string(std::chrono::ceil<std::chrono::seconds>(delay).count()));
  CHECK(refused.trailer("ratelimit-policy") == R"("/swl.example.Greeter/Hello";q=2;w=10)");

  // Search has its own limit, per x-api-key.
  CHECK(client.call(kSearch, "k1").text == "results for swl");
  CHECK(client.call(kSearch, "k1").status.error_code() == ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(client.call(kSearch, "k2").status.error_code() == ::grpc::StatusCode::OK);

  // Redis paused: the example fails open, so a refused caller's calls go through, unlimited.
  redis.pause();
  const Answer unlimited = client.call(kSearch, "k1");
  redis.resume();
  CHECK(unlimited.status.error_code() == ::grpc::StatusCode::OK);
  CHECK(unlimited.trailers.count("ratelimit") == 0);
  const auto stopping = std::chrono::steady_clock::now();
  service.stop();
  CHECK(std::chrono::steady_clock::now() - stopping < 4s);  // it exits on SIGTERM, not killed after 5 s
}
