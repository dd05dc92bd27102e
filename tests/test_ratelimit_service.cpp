// swl-ratelimit as Envoy calls it: the server program and a redis-server, both started here, and
// ShouldRateLimit over gRPC, each status checked against what the configuration's limits give.

#include "support/child_process.hpp"
#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_sentinel.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <swl/redis/hash_slot.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <arpa/inet.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace rls = envoy::service::ratelimit::v3;
using swl::test::ChildProcess;
using swl::test::Entries;
using swl::test::header;
using swl::test::microsecondsOf;
using swl::test::RateLimitProcess;
using swl::test::readFile;
using swl::test::RedisCluster;
using swl::test::RedisSentinel;
using swl::test::RedisServer;
using swl::test::request;
using swl::test::TemporaryDirectory;

const std::string kConfig = std::string(swl::test::kShopRules) + R"yaml(  - key: route
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: tenant
    descriptors:
      - key: plan
        value: free
        rate_limit: {unit: hour, requests_per_unit: 2}
  - key: bucket
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: gcra}
)yaml";

// The swl-ratelimit program (CMake gives its path), on a port it chose, with its output kept.
class RateLimitServer {
 public:
  RateLimitServer(const std::filesystem::path& config, int redis_port, std::vector<std::string> more = {})
      : RateLimitServer(config, withFlags({"--redis", "127.0.0.1:" + std::to_string(redis_port)}, std::move(more))) {}

  // `flags` say where Redis is, and anything else; `environment` is set for the server alone.
  RateLimitServer(const std::filesystem::path& config, const std::vector<std::string>& flags,
                  const std::vector<std::pair<std::string, std::string>>& environment = {})
      : process_(config.parent_path() / ("server-" + std::to_string(++started_) + ".out"),
                 withFlags({"--config", config.string(), "--listen", "127.0.0.1:0"}, flags), environment,
                 RateLimitProcess::Inherit::the_tests_environment),
        stub_(rls::RateLimitService::NewStub(process_.channel())) {}

  // One call, as Envoy makes it; its status must be OK.
  rls::RateLimitResponse call(const rls::RateLimitRequest& request) {
    rls::RateLimitResponse response;
    const grpc::Status status = callStatus(request, response);
    INFO(status.error_message());
    REQUIRE(status.ok());
    return response;
  }

  grpc::Status callStatus(const rls::RateLimitRequest& request, rls::RateLimitResponse& response) {
    return process_.callStatus(request, response);
  }

  // SIGTERM: its exit status once it has stopped by itself within `patience` (-1 if it had to be killed).
  int terminate(std::chrono::milliseconds patience) {
    ::kill(process_.pid(), SIGTERM);
    return process_.waitForExit(patience);
  }

  // SIGHUP, then waits until the output says the configuration was reloaded or kept (`count` times).
  void reload(int count) {
    ::kill(process_.pid(), SIGHUP);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (reloads() < count) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("swl-ratelimit did not reload");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::string output() const { return process_.output(); }

  // A health checker's call of `method` on grpc.health.v1.Health for `service` ("" for the whole server),
  // sent and read as bytes, as any checker's own .proto would: its status and the response's bytes.
  std::pair<grpc::Status, std::string> health(const std::string& method, const std::string& service = "") {
    grpc::GenericStub stub(process_.channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    const std::string request_bytes =
        service.empty() ? "" : "\x0a" + std::string(1, static_cast<char>(service.size())) + service;  // field 1
    grpc::Slice request_slice(request_bytes);
    const grpc::ByteBuffer request(&request_slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, "/grpc.health.v1.Health/" + method, grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status status) { done.set_value(std::move(status)); });
    const grpc::Status status = done.get_future().get();
    std::vector<grpc::Slice> slices;
    std::string bytes;
    if (status.ok() && response.Dump(&slices).ok()) {
      for (const grpc::Slice& slice : slices) bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    return {status, bytes};
  }

  // The health check for the whole server answers SERVING: field 1 is 1.
  bool serving() {
    const auto [status, bytes] = health("Check");
    INFO(status.error_message());
    return status.ok() && bytes == std::string("\x08\x01");
  }

  static std::vector<std::string> withFlags(std::vector<std::string> flags, const std::vector<std::string>& more) {
    flags.insert(flags.end(), more.begin(), more.end());
    return flags;
  }

  // What /metrics serves, when the server was started with --metrics.
  std::string metrics() const {
    const std::string text = output();
    const std::string mark = "metrics on 127.0.0.1:";
    const auto at = text.find(mark);
    if (at == std::string::npos) throw std::runtime_error("swl-ratelimit serves no metrics: " + text);
    return httpGet(std::stoi(text.substr(at + mark.size())), "/metrics");
  }

  // An HTTP/1.0 GET on 127.0.0.1: the whole response, headers included, once the server closes.
  static std::string httpGet(int port, const std::string& path) {
    const int socket_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval patience{20, 0};
    ::setsockopt(socket_fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    std::string response;
    if (::connect(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
      if (::send(socket_fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
        char buffer[4096];
        for (ssize_t got; (got = ::recv(socket_fd, buffer, sizeof buffer, 0)) > 0;) response.append(buffer, got);
      }
    }
    ::close(socket_fd);
    if (response.rfind("HTTP/1.", 0) != 0 || response.find(" 200 ") == std::string::npos) {
      throw std::runtime_error("GET " + path + " failed: " + response.substr(0, 200));
    }
    return response;
  }

 private:
  int reloads() const { return process_.count("configuration reloaded") + process_.count("configuration kept"); }

  static inline std::atomic<int> started_{0};
  RateLimitProcess process_;
  std::unique_ptr<rls::RateLimitService::Stub> stub_;
};

// `count` calls made from threads of their own while the test goes on, each a new user's first: Redis
// admits it with 2 of the user's 3 left. callStatus, not call: Catch's assertions are for the test's
// own thread.
class CallsInProgress {
 public:
  CallsInProgress(RateLimitServer& server, const std::string& user_prefix, int count) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, &server, user = user_prefix + std::to_string(i)] {
        rls::RateLimitResponse response;
        const auto status = server.callStatus(request({{{"user", user}}}), response);
        if (status.ok() && response.overall_code() == rls::RateLimitResponse::OK && response.statuses_size() == 1 &&
            response.statuses(0).limit_remaining() == 2) {
          ++admitted_;
        }
      });
    }
  }
  ~CallsInProgress() { join(); }
  CallsInProgress(const CallsInProgress&) = delete;
  CallsInProgress& operator=(const CallsInProgress&) = delete;

  // How many Redis has admitted so far.
  int admitted() const { return admitted_; }

  // Once every call has come back: how many Redis admitted.
  int join() {
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
    return admitted_;
  }

 private:
  std::atomic<int> admitted_{0};
  std::vector<std::thread> threads_;
};

struct Running {
  TemporaryDirectory directory;
  RedisServer redis;
  RateLimitServer server;
  explicit Running(const std::string& config = kConfig, std::vector<std::string> more = {})
      : server(directory.write("config.yaml", config), redis.port(), std::move(more)) {}
};

}  // namespace

TEST_CASE(
    "swl-ratelimit admits a descriptor up to its limit, then answers OVER_LIMIT with the limit, what remains and "
    "Retry-After") {
  Running running;
  for (int call = 1; call <= 4; ++call) {
    const auto response = running.server.call(request({{{"user", "alice"}}}));
    REQUIRE(response.statuses_size() == 1);
    const auto& status = response.statuses(0);
    CHECK(status.current_limit().requests_per_unit() == 3);
    CHECK(status.current_limit().unit() == rls::RateLimitResponse::RateLimit::MINUTE);
    // The IETF fields, admitted or refused: 3 a minute, and what is left.
    CHECK(header(response, "ratelimit-policy") == R"("shop.user";q=3;w=60)");
    CHECK(header(response, "ratelimit") == R"("shop.user";r=)" + std::to_string(call <= 3 ? 3 - call : 0) + ";t=60");
    if (call <= 3) {
      CHECK(response.overall_code() == rls::RateLimitResponse::OK);
      CHECK(status.code() == rls::RateLimitResponse::OK);
      CHECK(status.limit_remaining() == static_cast<std::uint32_t>(3 - call));
      CHECK(header(response, "retry-after").empty());
    } else {
      CHECK(response.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
      CHECK(status.code() == rls::RateLimitResponse::OVER_LIMIT);
      CHECK(status.limit_remaining() == 0);
      // The exact wait: until the first of the three leaves the minute.
      CHECK(microsecondsOf(status.duration_until_reset()) > 0);
      CHECK(microsecondsOf(status.duration_until_reset()) <= 60'000'000);
      const int retry_after = std::stoi(header(response, "retry-after"));
      CHECK(retry_after >= 1);
      CHECK(retry_after <= 60);
    }
  }
  // Another value of the same key is another counter.
  CHECK(running.server.call(request({{{"user", "bob"}}})).statuses(0).limit_remaining() == 2);
}

TEST_CASE("swl-ratelimit decides a request's descriptors all or nothing: one refusal counts the request in none") {
  Running running;
  const auto both = request({{{"user", "carol"}}, {{"route", "/search"}}});
  for (int call = 1; call <= 3; ++call) {
    const auto response = running.server.call(both);
    CHECK(response.overall_code() == rls::RateLimitResponse::OK);
    CHECK(response.statuses(1).current_limit().name() == "search");
    CHECK(response.statuses(1).limit_remaining() == static_cast<std::uint32_t>(5 - call));
  }
  const auto refused = running.server.call(both);
  CHECK(refused.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(refused.statuses(0).code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(refused.statuses(1).code() == rls::RateLimitResponse::OK);
  CHECK(header(refused, "ratelimit-policy") == R"("shop.user";q=3;w=60, "search";q=5;w=60)");
  CHECK(header(refused, "ratelimit") == R"("shop.user";r=0;t=60, "search";r=2;t=60)");
  // The refused request took nothing of /search's five: two remain, and the next takes one.
  const auto search = running.server.call(request({{{"route", "/search"}}}));
  CHECK(search.overall_code() == rls::RateLimitResponse::OK);
  CHECK(search.statuses(0).limit_remaining() == 1);
}

TEST_CASE(
    "swl-ratelimit finds nested descriptors, a value's own rule before its key's, and no rule for a partial path") {
  Running running;
  const auto other = running.server.call(request({{{"route", "/other"}}}));
  CHECK(other.statuses(0).current_limit().requests_per_unit() == 100);
  const auto plan = running.server.call(request({{{"tenant", "acme"}, {"plan", "free"}}}));
  CHECK(plan.statuses(0).current_limit().requests_per_unit() == 2);
  CHECK(plan.statuses(0).current_limit().unit() == rls::RateLimitResponse::RateLimit::HOUR);
  CHECK(plan.statuses(0).limit_remaining() == 1);
  for (const auto& partial :
       {request({{{"tenant", "acme"}}}), request({{{"plan", "free"}}}),
        request({{{"tenant", "acme"}, {"plan", "paid"}}}), request({{{"user", "x"}}}, 0, "elsewhere")}) {
    const auto response = running.server.call(partial);
    CHECK(response.overall_code() == rls::RateLimitResponse::OK);
    CHECK(response.statuses(0).code() == rls::RateLimitResponse::OK);
    CHECK_FALSE(response.statuses(0).has_current_limit());
  }
}

TEST_CASE(
    "swl-ratelimit takes the request's limit override and its hits_addend, the request's and a descriptor's own") {
  Running running;
  auto overridden = request({{{"user", "dave"}}});
  overridden.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(1);
  overridden.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::MINUTE);
  CHECK(running.server.call(overridden).overall_code() == rls::RateLimitResponse::OK);
  const auto second = running.server.call(overridden);
  CHECK(second.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(second.statuses(0).current_limit().requests_per_unit() == 1);
  // The override counts apart from the configured limit: dave still has his three.
  CHECK(running.server.call(request({{{"user", "dave"}}})).statuses(0).limit_remaining() == 2);

  const auto two = request({{{"user", "erin"}}}, 2);
  CHECK(running.server.call(two).statuses(0).limit_remaining() == 1);
  CHECK(running.server.call(two).overall_code() == rls::RateLimitResponse::OVER_LIMIT);

  auto three = request({{{"user", "frank"}}}, 1);
  three.mutable_descriptors(0)->mutable_hits_addend()->set_value(3);
  CHECK(running.server.call(three).statuses(0).limit_remaining() == 0);
  auto four = request({{{"user", "grace"}}});
  four.mutable_descriptors(0)->mutable_hits_addend()->set_value(4);  // more than the whole limit
  CHECK(running.server.call(four).overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(running.server.call(request({{{"user", "grace"}}})).statuses(0).limit_remaining() == 2);
}

TEST_CASE(
    "swl-ratelimit charges each descriptor its own hits_addend in one decision, and a descriptor refusing its cost "
    "leaves every counter untouched") {
  Running running;
  // heidi's user limit is 3 a minute, /other's route limit 100: she asks 2 of the first and 40 of the second.
  auto costly = request({{{"user", "heidi"}}, {{"route", "/other"}}});
  costly.mutable_descriptors(0)->mutable_hits_addend()->set_value(2);
  costly.mutable_descriptors(1)->mutable_hits_addend()->set_value(40);
  const auto first = running.server.call(costly);
  CHECK(first.overall_code() == rls::RateLimitResponse::OK);
  CHECK(first.statuses(0).limit_remaining() == 1);
  CHECK(first.statuses(1).limit_remaining() == 60);
  // Her 2 no longer fit in the 1 left, though /other's 40 would: neither counter takes anything.
  const auto second = running.server.call(costly);
  CHECK(second.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(second.statuses(0).code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(second.statuses(1).code() == rls::RateLimitResponse::OK);
  CHECK(running.server.call(request({{{"route", "/other"}}})).statuses(0).limit_remaining() == 59);
  CHECK(running.server.call(request({{{"user", "heidi"}}})).statuses(0).limit_remaining() == 0);
}

TEST_CASE("swl-ratelimit counts nothing of a request one descriptor never fits, and answers the others as they stand") {
  Running running;
  // ivan's user limit is 3 a minute: 4 never fit. /other's 100 would take the 1 asked of it.
  auto too_costly = request({{{"user", "ivan"}}, {{"route", "/other"}}});
  too_costly.mutable_descriptors(0)->mutable_hits_addend()->set_value(4);
  const auto refused = running.server.call(too_costly);
  CHECK(refused.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(refused.statuses(0).code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(refused.statuses(1).code() == rls::RateLimitResponse::OK);
  CHECK(refused.statuses(1).limit_remaining() == 100);  // as it stands: nothing taken
  CHECK(running.server.call(request({{{"route", "/other"}}})).statuses(0).limit_remaining() == 99);
  CHECK(running.server.call(request({{{"user", "ivan"}}})).statuses(0).limit_remaining() == 2);
}

TEST_CASE(
    "swl-ratelimit keeps a gcra rule as a token bucket, decided all or nothing with the request's other "
    "descriptors") {
  Running running;
  // A bucket of 2 a minute: both at once, then one back every 30 s.
  const auto with_user = request({{{"bucket", "b"}}, {{"user", "ivan"}}});
  for (int call = 1; call <= 2; ++call) {
    const auto response = running.server.call(with_user);
    CHECK(response.overall_code() == rls::RateLimitResponse::OK);
    CHECK(response.statuses(0).limit_remaining() == static_cast<std::uint32_t>(2 - call));
  }
  const auto refused = running.server.call(with_user);
  CHECK(refused.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(refused.statuses(0).code() == rls::RateLimitResponse::OVER_LIMIT);
  const std::int64_t wait = microsecondsOf(refused.statuses(0).duration_until_reset());
  CHECK(wait > 20'000'000);  // the next unit comes back 30 s after the first went
  CHECK(wait <= 30'000'000);
  CHECK(header(refused, "retry-after") == std::to_string((wait + 999'999) / 1'000'000));
  // The bucket's refusal took nothing of ivan's 3 a minute: two were counted, and this third takes the last.
  CHECK(running.server.call(request({{{"user", "ivan"}}})).statuses(0).limit_remaining() == 0);
}

TEST_CASE(
    "swl-ratelimit: a shadow rule refuses nothing and records what it would refuse for no one, an unlimited one counts "
    "nothing") {
  Running running;
  for (int call = 1; call <= 3; ++call) {
    const auto response = running.server.call(request({{{"trial", "t"}}}));
    CHECK(response.overall_code() == rls::RateLimitResponse::OK);
    CHECK(response.statuses(0).code() == rls::RateLimitResponse::OK);
  }
  // The shadow rule would refuse: the user's rule alone decides, and counts the request.
  const auto together = request({{{"trial", "t"}}, {{"user", "heidi"}}});
  const auto response = running.server.call(together);
  CHECK(response.overall_code() == rls::RateLimitResponse::OK);
  CHECK(response.statuses(1).limit_remaining() == 2);
  CHECK(running.server.call(request({{{"user", "heidi"}}})).statuses(0).limit_remaining() == 1);
  CHECK(header(response, "ratelimit") == R"("shop.user";r=2;t=60)");  // a shadow rule is no client's limit
  for (int call = 1; call <= 10; ++call) {
    const auto unlimited = running.server.call(request({{{"internal", "batch"}}}));
    CHECK(unlimited.statuses(0).code() == rls::RateLimitResponse::OK);
    CHECK_FALSE(unlimited.statuses(0).has_current_limit());
    CHECK(unlimited.response_headers_to_add().empty());
  }
}

TEST_CASE("swl-ratelimit counts a descriptor given twice in one request once, and answers both alike") {
  Running running;
  const auto twice = running.server.call(request({{{"user", "kim"}}, {{"user", "kim"}}}));
  CHECK(twice.overall_code() == rls::RateLimitResponse::OK);
  CHECK(header(twice, "ratelimit") == R"("shop.user";r=2;t=60)");
  CHECK(twice.statuses(0).limit_remaining() == 2);
  CHECK(twice.statuses(1).limit_remaining() == 2);
  CHECK(running.server.call(request({{{"user", "kim"}}})).statuses(0).limit_remaining() == 1);
}

TEST_CASE("swl-ratelimit counts a weighted rule's hits in units and a fixed window per window") {
  Running running;
  const auto bulk = request({{{"bulk", "b"}}});
  CHECK(running.server.call(bulk).statuses(0).limit_remaining() == 5);
  CHECK(running.server.call(bulk).statuses(0).limit_remaining() == 0);
  CHECK(running.server.call(bulk).overall_code() == rls::RateLimitResponse::OVER_LIMIT);

  const auto window = request({{{"window", "w"}}});
  CHECK(running.server.call(window).overall_code() == rls::RateLimitResponse::OK);
  CHECK(running.server.call(window).overall_code() == rls::RateLimitResponse::OK);
  const auto refused = running.server.call(window);
  CHECK(refused.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  // Until the hour's window ends.
  CHECK(microsecondsOf(refused.statuses(0).duration_until_reset()) <= 3'600'000'000);
}

TEST_CASE(
    "swl-ratelimit answers by its failure policy while Redis is down, started before or after: open by default, closed "
    "when asked") {
  TemporaryDirectory directory;
  RedisServer redis;
  const auto config = directory.write("config.yaml", kConfig);
  RateLimitServer open(config, redis.port());
  RateLimitServer closed(config, redis.port(), {"--failure-mode", "closed"});
  CHECK(open.call(request({{{"user", "ivan"}}})).overall_code() == rls::RateLimitResponse::OK);
  redis.stop();
  for (int call = 1; call <= 5; ++call) {
    CHECK(open.call(request({{{"user", "ivan"}}})).overall_code() == rls::RateLimitResponse::OK);
    CHECK(closed.call(request({{{"user", "ivan"}}})).overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  }
  // A server started while Redis is down starts, and answers the same way.
  RateLimitServer started_without_redis(config, redis.port());
  CHECK(started_without_redis.call(request({{{"user", "ivan"}}})).overall_code() == rls::RateLimitResponse::OK);
}

TEST_CASE(
    "swl-ratelimit reloads its configuration on SIGHUP under load, and keeps the rules in force when the new file is "
    "wrong") {
  Running running;
  std::atomic<bool> done{false};
  std::atomic<int> calls{0}, failed{0};
  std::thread load([&] {
    while (!done) {
      rls::RateLimitResponse response;
      if (!running.server.callStatus(request({{{"route", "/other"}}}), response).ok()) ++failed;
      ++calls;
    }
  });
  std::string raised = kConfig;
  raised.replace(raised.find("requests_per_unit: 3"), 20, "requests_per_unit: 7");
  running.directory.write("config.yaml", raised);
  running.server.reload(1);
  CHECK(running.server.call(request({{{"user", "judy"}}})).statuses(0).current_limit().requests_per_unit() == 7);

  running.directory.write(
      "config.yaml",
      "domain: shop\ndescriptors:\n  - key: user\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n");
  running.server.reload(2);
  CHECK(running.server.output().find("config.yaml:4") != std::string::npos);
  CHECK(running.server.call(request({{{"user", "judy"}}})).statuses(0).current_limit().requests_per_unit() == 7);
  done = true;
  load.join();
  CHECK(calls > 0);
  CHECK(failed == 0);
}

TEST_CASE("swl-ratelimit refuses to start on a wrong configuration, naming its line") {
  TemporaryDirectory directory;
  const auto config =
      directory.write("config.yaml", "domain: shop\ndescriptors:\n  - key: user\n    rate_limit: {unit: fortnight}\n");
  ChildProcess server;
  const auto output = directory.path() / "out";
  server.start({std::getenv("SWL_RATELIMIT_SERVER"), "--config", config.string(), "--listen", "127.0.0.1:0"},
               output.string(), ChildProcess::Errors::with_output);
  CHECK(server.waitForExit(std::chrono::seconds(20)) == 1);
  const std::string said = readFile(output);
  CHECK(said.find("config.yaml:4:") != std::string::npos);
  CHECK(said.find("\"fortnight\"") != std::string::npos);
}

TEST_CASE("swl-ratelimit exits with status 1 and says so when it cannot listen on its address") {
  TemporaryDirectory directory;
  RedisServer redis;
  ChildProcess server;
  const auto output = directory.path() / "out";
  // 192.0.2.1 (TEST-NET-1, RFC 5737) is no address of this machine: bind fails.
  server.start({std::getenv("SWL_RATELIMIT_SERVER"), "--config", directory.write("config.yaml", kConfig).string(),
                "--redis", "127.0.0.1:" + std::to_string(redis.port()), "--listen", "192.0.2.1:8081"},
               output.string(), ChildProcess::Errors::with_output);
  CHECK(server.waitForExit(std::chrono::seconds(20)) == 1);
  CHECK(readFile(output).find("swl-ratelimit: cannot listen on 192.0.2.1:8081") != std::string::npos);
}

TEST_CASE("swl-ratelimit refuses a request of more limited descriptors than one decision takes with INVALID_ARGUMENT") {
  Running running;
  std::vector<Entries> many;
  for (int i = 0; i < 10; ++i) many.push_back({{"user", "u" + std::to_string(i)}});
  rls::RateLimitResponse response;
  const grpc::Status status = running.server.callStatus(request(many), response);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(status.error_message().find("at most 9") != std::string::npos);
}

TEST_CASE("swl-ratelimit counts each rule's outcomes for Prometheus on --metrics, beside the library's own series") {
  TemporaryDirectory directory;
  RedisServer redis;
  RateLimitServer server(directory.write("config.yaml", kConfig), redis.port(), {"--metrics", "127.0.0.1:0"});
  for (int call = 1; call <= 4; ++call) server.call(request({{{"user", "lena"}}}));
  for (int call = 1; call <= 2; ++call) server.call(request({{{"trial", "t"}}}));
  auto overridden = request({{{"user", "lena"}}});
  overridden.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(5);
  overridden.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::HOUR);
  server.call(overridden);
  const std::string metrics = server.metrics();
  INFO(metrics);
  CHECK(metrics.find(R"(swl_ratelimit_descriptors_total{outcome="ok",rule="shop.user"} 3)") != std::string::npos);
  CHECK(metrics.find(R"(swl_ratelimit_descriptors_total{outcome="over_limit",rule="shop.user"} 1)") !=
        std::string::npos);
  CHECK(metrics.find(R"(swl_ratelimit_descriptors_total{outcome="ok",rule="shop.trial"} 1)") != std::string::npos);
  CHECK(metrics.find(R"(swl_ratelimit_descriptors_total{outcome="shadow_over_limit",rule="shop.trial"} 1)") !=
        std::string::npos);
  CHECK(metrics.find(R"(swl_ratelimit_descriptors_total{outcome="ok",rule="override"} 1)") != std::string::npos);
  CHECK(metrics.find(R"(swl_decisions_total{limiter="swl-ratelimit",tier="redis",verdict="allowed"})") !=
        std::string::npos);
}

namespace {

// The Redis key swl-ratelimit keeps `user`'s counter of the kConfig rule shop.user in.
const std::string kCarolKey = "swlrl:{4=shop}:log:4=user:0=:5=carol";

// Three requests of carol on /search are admitted and the fourth is refused by her limit of 3; the
// refused one took nothing of /search's 5.
void checkAllOrNothing(RateLimitServer& server) {
  const auto both = request({{{"user", "carol"}}, {{"route", "/search"}}});
  for (int call = 1; call <= 3; ++call) {
    const auto response = server.call(both);
    CHECK(response.overall_code() == rls::RateLimitResponse::OK);
    CHECK(response.statuses(0).limit_remaining() == static_cast<std::uint32_t>(3 - call));
    CHECK(response.statuses(1).limit_remaining() == static_cast<std::uint32_t>(5 - call));
  }
  const auto refused = server.call(both);
  CHECK(refused.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(refused.statuses(0).code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(server.call(request({{{"route", "/search"}}})).statuses(0).limit_remaining() == 1);
}

}  // namespace

TEST_CASE(
    "swl-ratelimit on a Redis Cluster (--redis-cluster) keeps one request's counters in its domain's slot, so they "
    "are still decided all or nothing") {
  TemporaryDirectory directory;
  RedisCluster cluster;
  const auto seeds = cluster.seeds();
  RateLimitServer server(directory.write("config.yaml", kConfig),
                         {"--redis-cluster", "127.0.0.1:" + std::to_string(seeds[0].port) +
                                                 ",127.0.0.1:" + std::to_string(seeds[1].port)});
  checkAllOrNothing(server);
  // The counters are where the domain's hash tag puts them: on that slot's master.
  swl::Connection master = cluster.connect(cluster.masterOf(swl::hashSlot("{shop}")));
  CHECK(swl::test::logEntries(master, kCarolKey) == 3);
  CHECK(swl::test::logEntries(master, "swlrl:{4=shop}:log:5=route:7=/search:7=/search") == 4);
}

TEST_CASE(
    "swl-ratelimit behind Redis Sentinel (--redis-sentinel) finds the master with the Sentinels' password and "
    "authenticates to it with the one in its environment") {
  TemporaryDirectory directory;
  RedisSentinel sentinel("data-secret", "sentinel-secret");
  std::string sentinels(RedisSentinel::kMasterName);
  for (const swl::Address& address : sentinel.sentinels()) sentinels += "," + address.endpoint();
  RateLimitServer server(directory.write("config.yaml", kConfig),
                         {"--redis-sentinel", sentinels, "--redis-sentinel-password", "sentinel-secret"},
                         {{"SWL_RATELIMIT_REDIS_PASSWORD", "data-secret"}});
  checkAllOrNothing(server);
  swl::Connection master = sentinel.connectToNode(sentinel.firstMasterPort());
  CHECK(swl::test::logEntries(master, kCarolKey) == 3);
}

TEST_CASE("swl-ratelimit refuses flags that contradict each other, naming them, and prints its usage") {
  TemporaryDirectory directory;
  const auto config = directory.write("config.yaml", kConfig);
  const auto exitOf = [&](std::vector<std::string> flags) {
    ChildProcess server;
    const auto output = directory.path() / "out";
    std::vector<std::string> arguments{std::getenv("SWL_RATELIMIT_SERVER"), "--config", config.string()};
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    server.start(arguments, output.string(), ChildProcess::Errors::with_output);
    const int status = server.waitForExit(std::chrono::seconds(20));
    return std::make_pair(status, readFile(output));
  };
  const auto [both_status, both_output] = exitOf({"--redis", "127.0.0.1:1", "--redis-cluster", "127.0.0.1:2"});
  CHECK(both_status == 2);
  CHECK(both_output.find("--redis and --redis-cluster both say where Redis is") != std::string::npos);
  const auto [unknown_status, unknown_output] = exitOf({"--redis-port", "7000"});
  CHECK(unknown_status == 2);
  CHECK(unknown_output.find("unknown flag --redis-port") != std::string::npos);
  CHECK(unknown_output.find("--redis-sentinel MASTER,HOST:PORT") != std::string::npos);  // the usage text
}

TEST_CASE(
    "swl-ratelimit answers health checks, and requests no rule limits, while its thread waits on a stopped Redis, "
    "and decides the calls that came meanwhile once Redis is back") {
  TemporaryDirectory directory;
  RedisServer redis;
  // One thread (the default), and a Redis timeout longer than the test: the calls below wait until Redis
  // resumes. The thread waits on the first; its standby takes the others and answers the two calls that
  // need no Redis.
  RateLimitServer server(directory.write("config.yaml", kConfig), redis.port(), {"--redis-timeout", "15000"});
  CHECK(server.call(request({{{"user", "first"}}})).overall_code() == rls::RateLimitResponse::OK);
  redis.pause();
  CallsInProgress waiting(server, "waiting", 6);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(server.serving());
  const auto unlimited = server.call(request({{{"internal", "batch"}}, {{"nobody", "x"}}}));
  CHECK(unlimited.overall_code() == rls::RateLimitResponse::OK);
  CHECK(waiting.admitted() == 0);  // those two came back while every limited request still waited on Redis
  redis.resume();
  CHECK(waiting.join() == 6);
}

TEST_CASE(
    "swl-ratelimit with --failure-mode closed answers OVER_LIMIT while Redis is stopped, and none of those calls is "
    "counted once Redis resumes") {
  TemporaryDirectory directory;
  RedisServer redis;
  RateLimitServer server(directory.write("config.yaml", kConfig), redis.port(),
                         {"--failure-mode", "closed", "--redis-timeout", "300"});
  // Connected, Redis's clock read, the script loaded.
  CHECK(server.call(request({{{"user", "first"}}})).overall_code() == rls::RateLimitResponse::OK);
  redis.pause();
  // The first call's script reaches Redis and waits there; the server gives up on it at its deadline.
  for (const std::string user : {"stalled", "then", "again"}) {
    CHECK(server.call(request({{{"user", user}}})).overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  }
  redis.resume();
  // Redis ran the stalled call when it resumed, past its deadline: it recorded nothing, so each user's
  // first admitted call leaves 2 of 3. (The first calls after may still meet the open circuit.)
  for (const std::string user : {"stalled", "then", "again"}) {
    rls::RateLimitResponse response;
    REQUIRE(swl::test::eventually([&] {
      response = server.call(request({{{"user", user}}}));
      return response.overall_code() == rls::RateLimitResponse::OK;
    }));
    CHECK(response.statuses(0).limit_remaining() == 2);
  }
}

TEST_CASE(
    "swl-ratelimit answers gRPC's health check for the whole server and for its service by name, NOT_FOUND for "
    "another, and UNIMPLEMENTED for Watch") {
  TemporaryDirectory directory;
  RedisServer redis;
  RateLimitServer server(directory.write("config.yaml", kConfig), redis.port());
  CHECK(server.serving());
  const auto [named, named_bytes] = server.health("Check", "envoy.service.ratelimit.v3.RateLimitService");
  CHECK(named.ok());
  CHECK(named_bytes == std::string("\x08\x01"));
  const auto [other, other_bytes] = server.health("Check", "some.other.Service");
  CHECK(other.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(other.error_message().find("some.other.Service") != std::string::npos);
  CHECK(server.health("Watch").first.error_code() == grpc::StatusCode::UNIMPLEMENTED);
  CHECK(server.call(request({{{"user", "after health checks"}}})).overall_code() == rls::RateLimitResponse::OK);
}

TEST_CASE("swl-ratelimit stops on SIGTERM after answering the calls in progress, and exits with status 0") {
  TemporaryDirectory directory;
  RedisServer redis;
  RateLimitServer server(directory.write("config.yaml", kConfig), redis.port(), {"--redis-timeout", "15000"});
  CHECK(server.call(request({{{"user", "first"}}})).overall_code() == rls::RateLimitResponse::OK);
  redis.pause();  // the calls below are in progress when SIGTERM comes: one on Redis, the others taken
  CallsInProgress stopping(server, "stopping", 6);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto exit_status = std::async(std::launch::async, [&] { return server.terminate(std::chrono::seconds(20)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(exit_status.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);  // still answering
  redis.resume();
  CHECK(stopping.join() == 6);  // decided by Redis (2 of 3 left), not cancelled, not by the failure policy
  CHECK(exit_status.get() == 0);
}

TEST_CASE("swl-ratelimit decides the calls that wait together in one round trip to Redis, each exactly") {
  TemporaryDirectory directory;
  RedisServer redis;
  auto connection = redis.connect();
  // One thread: while Redis is stopped it waits on the first call, and its standby takes the others for
  // the thread's next round.
  RateLimitServer server(directory.write("config.yaml", kConfig), redis.port(),
                         {"--pool-size", "1", "--redis-timeout", "20000"});
  CHECK(server.call(request({{{"user", "first"}}})).overall_code() == rls::RateLimitResponse::OK);
  const long long reads_before = swl::test::infoCounter(connection, "stats", "total_reads_processed:");
  redis.pause();
  constexpr int kCalls = 100;  // more than a batch's most (64): the calls taken meanwhile make two rounds
  std::atomic<int> admitted{0}, remaining{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      // Two calls per user, both admitted (a user has 3 a minute): one leaves 2, the other 1. callStatus,
      // not call: Catch's assertions are for the test's own thread.
      rls::RateLimitResponse response;
      const auto status = server.callStatus(request({{{"user", "batched" + std::to_string(i / 2)}}}), response);
      if (!status.ok() || response.statuses_size() != 1) return;
      if (response.overall_code() == rls::RateLimitResponse::OK) ++admitted;
      remaining += static_cast<int>(response.statuses(0).limit_remaining());
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // every call reaches the server and queues
  redis.resume();
  for (std::thread& caller : callers) caller.join();
  const long long reads = swl::test::infoCounter(connection, "stats", "total_reads_processed:") - reads_before;
  INFO(reads << " reads of Redis for " << kCalls << " calls");
  CHECK(admitted == kCalls);
  CHECK(remaining == kCalls / 2 * (2 + 1));
  // The first call alone, the other 99 in two writes of at most 64 (and an INFO's read on each side): 4
  // reads, or a few more should a call reach the server only after Redis resumed. One call a read would
  // be 101.
  CHECK(reads <= kCalls / 2);
  for (int user = 0; user < kCalls / 2; ++user) {
    const auto answer = server.call(request({{{"user", "batched" + std::to_string(user)}}}));
    CHECK(answer.statuses(0).limit_remaining() == 0);  // each user's two calls counted, each once
  }
}

// envoyproxy/ratelimit's own expectations (its test/integration/integration_test.go and the replaces
// scenarios of its example configuration), asked of swl-ratelimit through gRPC: our files, written to hold
// its cases, and its requests and answers. From an empty key within one window, a fixed window and an exact
// one agree; where swl differs on purpose (a refused request counts in no rule), the test says so.

namespace {

// envoyproxy/ratelimit's integration test configuration, its three domains in one file each.
const std::vector<std::pair<std::string, std::string>> kEnvoyIntegrationFiles{
    {"basic.yaml", R"yaml(domain: basic
descriptors:
  - key: key1
    rate_limit: {unit: second, requests_per_unit: 50}
  - key: one_per_minute
    rate_limit: {unit: minute, requests_per_unit: 1}
)yaml"},
    {"another.yaml", R"yaml(domain: another
descriptors:
  - key: key2
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: key3
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: key4
    rate_limit: {unit: day, requests_per_unit: 20}
)yaml"},
    {"share_threshold.yaml", R"yaml(domain: share-threshold-test
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: files_no_share
    value: files_no_share/*
    rate_limit: {unit: hour, requests_per_unit: 10}
)yaml"},
    // The replaces, blocked and shadow rules of its example configuration (domain rl).
    {"example.yaml", R"yaml(---
domain: rl
descriptors:
  - key: category
    value: account
    rate_limit:
      replaces: [{name: bkthomps}, {name: fake_name}]
      unit: minute
      requests_per_unit: 4
  - key: source_cluster
    value: proxy
    descriptors:
      - key: destination_cluster
        value: bkthomps
        rate_limit: {replaces: [{name: bkthomps}], unit: minute, requests_per_unit: 2}
      - key: destination_cluster
        value: override
        rate_limit: {replaces: [{name: banned_limit}], unit: minute, requests_per_unit: 2}
  - key: foo
    rate_limit: {unit: minute, requests_per_unit: 2}
    descriptors:
      - key: bar
        value: bkthomps
        rate_limit: {name: bkthomps, unit: minute, requests_per_unit: 1}
      - key: bar
        value: banned
        rate_limit: {name: banned_limit, unit: minute, requests_per_unit: 0}
      - key: baz
        value: not-so-shady
        rate_limit: {unit: minute, requests_per_unit: 3}
      - key: baz
        value: shady
        rate_limit: {unit: minute, requests_per_unit: 3}
        shadow_mode: true
)yaml"},
};

struct RunningEnvoyIntegration {
  TemporaryDirectory directory;
  RedisServer redis;
  RateLimitServer server;
  RunningEnvoyIntegration()
      : server(
            [this] {
              for (const auto& [name, text] : kEnvoyIntegrationFiles) directory.write("config/" + name, text);
              return directory.path() / "config";
            }(),
            redis.port()) {}
};

// A status as envoyproxy/ratelimit's tests state one: its code, and for a limited descriptor its limit and
// what it has left.
std::string statusOf(const rls::RateLimitResponse::DescriptorStatus& status) {
  std::string said = status.code() == rls::RateLimitResponse::OK ? "OK" : "OVER_LIMIT";
  if (!status.has_current_limit()) return said;
  return said + " " + std::to_string(status.current_limit().requests_per_unit()) + "/" +
         rls::RateLimitResponse::RateLimit::Unit_Name(status.current_limit().unit()) + " left " +
         std::to_string(status.limit_remaining());
}

}  // namespace

TEST_CASE("envoyproxy/ratelimit's integration cases: an unknown domain, a limit per second, 20 a minute then over") {
  RunningEnvoyIntegration running;
  const auto unknown = running.server.call(request({{{"hello", "world"}}}, 0, "foo"));
  CHECK(unknown.overall_code() == rls::RateLimitResponse::OK);
  CHECK(statusOf(unknown.statuses(0)) == "OK");

  const auto basic = running.server.call(request({{{"key1", "foo"}}}, 0, "basic"));
  CHECK(statusOf(basic.statuses(0)) == "OK 50/SECOND left 49");
  CHECK(basic.statuses(0).has_duration_until_reset());

  for (int i = 0; i < 25; ++i) {
    const auto response = running.server.call(request({{{"key2", "r1"}}}, 0, "another"));
    INFO("call " << i);
    if (i < 20) {
      CHECK(response.overall_code() == rls::RateLimitResponse::OK);
      CHECK(statusOf(response.statuses(0)) == "OK 20/MINUTE left " + std::to_string(20 - (i + 1)));
    } else {
      CHECK(response.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
      CHECK(statusOf(response.statuses(0)) == "OVER_LIMIT 20/MINUTE left 0");
    }
  }
}

TEST_CASE(
    "envoyproxy/ratelimit's integration cases: two descriptors, one over its hour, leave the other's count where it "
    "stood, as envoyproxy does with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT") {
  RunningEnvoyIntegration running;
  for (int i = 0; i < 15; ++i) {
    const auto response = running.server.call(request({{{"key2", "r2"}}, {{"key3", "r2"}}}, 0, "another"));
    INFO("call " << i);
    if (i < 10) {
      CHECK(response.overall_code() == rls::RateLimitResponse::OK);
      CHECK(statusOf(response.statuses(0)) == "OK 20/MINUTE left " + std::to_string(20 - (i + 1)));
      CHECK(statusOf(response.statuses(1)) == "OK 10/HOUR left " + std::to_string(10 - (i + 1)));
    } else {
      CHECK(response.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
      CHECK(statusOf(response.statuses(0)) == "OK 20/MINUTE left 10");  // envoyproxy by default: 20 - (i + 1)
      CHECK(statusOf(response.statuses(1)) == "OVER_LIMIT 10/HOUR left 0");
    }
  }
}

TEST_CASE("envoyproxy/ratelimit's integration cases: share_threshold counts every value of a pattern on one counter") {
  RunningEnvoyIntegration running;
  for (int i = 0; i < 10; ++i) {
    CHECK(running.server.call(request({{{"files", "files/a.pdf"}}}, 0, "share-threshold-test")).overall_code() ==
          rls::RateLimitResponse::OK);
  }
  const auto shared = running.server.call(request({{{"files", "files/b.csv"}}}, 0, "share-threshold-test"));
  CHECK(shared.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(statusOf(shared.statuses(0)) == "OVER_LIMIT 10/HOUR left 0");
  for (int i = 0; i < 10; ++i) {
    const auto each = running.server.call(
        request({{{"files_no_share", "files_no_share/" + std::to_string(i)}}}, 0, "share-threshold-test"));
    CHECK(statusOf(each.statuses(0)) == "OK 10/HOUR left 9");
  }
}

TEST_CASE(
    "envoyproxy/ratelimit's example cases: a blocked key is over until a rule that replaces it applies, replaced "
    "limits count nothing, and a shadow rule never limits") {
  RunningEnvoyIntegration running;
  const auto call = [&](const std::vector<Entries>& descriptors) {
    return running.server.call(request(descriptors, 0, "rl")).overall_code() == rls::RateLimitResponse::OK;
  };
  const Entries banned{{"foo", "x"}, {"bar", "banned"}};
  CHECK_FALSE(call({banned}));  // 0 a minute
  const Entries override_it{{"source_cluster", "proxy"}, {"destination_cluster", "override"}};
  CHECK(call({banned, override_it}));  // banned_limit replaced: 2 a minute
  CHECK(call({banned, override_it}));
  CHECK_FALSE(call({banned, override_it}));

  const Entries bkthomps{{"foo", "x"}, {"bar", "bkthomps"}};
  const Entries via_proxy{{"source_cluster", "proxy"}, {"destination_cluster", "bkthomps"}};
  CHECK(call({bkthomps, via_proxy}));  // bkthomps (1 a minute) replaced by 2 a minute
  CHECK(call({bkthomps, via_proxy}));
  CHECK_FALSE(call({bkthomps, via_proxy}));
  const Entries account{{"category", "account"}};
  for (int i = 0; i < 4; ++i) CHECK(call({bkthomps, account}));  // replaced again, by 4 a minute
  CHECK_FALSE(call({bkthomps, account}));

  for (int i = 0; i < 3; ++i) CHECK(call({{{"foo", "y"}, {"baz", "not-so-shady"}}}));
  CHECK_FALSE(call({{{"foo", "y"}, {"baz", "not-so-shady"}}}));
  for (int i = 0; i < 5; ++i) CHECK(call({{{"foo", "z"}, {"baz", "shady"}}}));
}
