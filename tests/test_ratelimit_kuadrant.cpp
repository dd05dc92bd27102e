// Kuadrant's protocol (kuadrant.service.ratelimit.v1.RateLimitService, limitador's) on swl-ratelimit's gRPC
// port: CheckRateLimit counts nothing and admits while one more hit fits; Report charges every counter
// whether or not it fits, so a token budget checked then reported binds; limitador's own service tests'
// expectations (an empty domain UNKNOWN, a limit of 0 OVER_LIMIT, every descriptor taken into account).
// The server program, a real gRPC client of the Kuadrant service, a private redis-server.

#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_server.hpp"

#include "kuadrant/service/ratelimit/v1/kuadrantrls.grpc.pb.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

// A namespace of its own: the test files of one program share a translation unit (tests/CMakeLists.txt).
namespace ratelimit_kuadrant_tests {

namespace rls = envoy::service::ratelimit::v3;
namespace kuadrant_v1 = ::kuadrant::service::ratelimit::v1;
using swl::test::Entries;
using swl::test::RateLimitProcess;
using swl::test::RedisServer;
using swl::test::TemporaryDirectory;

// A budget of tokens per user a second; limitador's tests' shapes: a limit of 0, and two descriptors.
constexpr const char* kRules = R"yaml(domain: llm
descriptors:
  - key: user
    rate_limit:
      unit: second
      requests_per_unit: 100
  - key: banned
    rate_limit:
      unit: minute
      requests_per_unit: 0
  - key: x
    value: "1"
    rate_limit:
      unit: minute
      requests_per_unit: 10
)yaml";

class KuadrantClient {
 public:
  KuadrantClient()
      : process_(directory_.path() / "server.out",
                 {"--config", directory_.write("config/llm.yaml", kRules).string(), "--listen", "127.0.0.1:0",
                  "--redis", "127.0.0.1:" + std::to_string(redis_.port())},
                 {}, RateLimitProcess::Inherit::the_tests_environment),
        stub_(kuadrant_v1::RateLimitService::NewStub(process_.channel())) {}

  rls::RateLimitResponse check(const std::vector<Entries>& descriptors, const std::string& domain = "llm") {
    return call(&kuadrant_v1::RateLimitService::Stub::CheckRateLimit, swl::test::request(descriptors, 0, domain));
  }
  rls::RateLimitResponse report(const std::vector<Entries>& descriptors, std::uint32_t hits) {
    return call(&kuadrant_v1::RateLimitService::Stub::Report, swl::test::request(descriptors, hits, "llm"));
  }
  bool admits(const Entries& descriptor) { return check({descriptor}).overall_code() == rls::RateLimitResponse::OK; }

  kuadrant_v1::RateLimitService::Stub& stub() { return *stub_; }

 private:
  template <class Method>
  rls::RateLimitResponse call(Method method, const rls::RateLimitRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    rls::RateLimitResponse response;
    const grpc::Status status = ((*stub_).*method)(&context, request, &response);
    INFO(status.error_message());
    REQUIRE(status.ok());
    return response;
  }

  TemporaryDirectory directory_;
  RedisServer redis_;
  RateLimitProcess process_;
  std::unique_ptr<kuadrant_v1::RateLimitService::Stub> stub_;
};

const Entries kAnn{{"user", "ann"}};

TEST_CASE("Kuadrant's CheckRateLimit counts nothing, and admits while one more hit fits every counter") {
  KuadrantClient kuadrant;
  for (int i = 0; i < 5; ++i) CHECK(kuadrant.admits(kAnn));  // checked, never counted
  kuadrant.report({kAnn}, 99);
  CHECK(kuadrant.admits(kAnn));  // 99 of 100: one more fits
  kuadrant.report({kAnn}, 1);
  CHECK_FALSE(kuadrant.admits(kAnn));  // 100 of 100
}

TEST_CASE("Kuadrant's Report charges past the limit, so a token budget binds, and frees as the window slides") {
  KuadrantClient kuadrant;
  const auto before = std::chrono::steady_clock::now();
  CHECK(kuadrant.admits(kAnn));
  const rls::RateLimitResponse reported = kuadrant.report({kAnn}, 250);  // the stream used 250 tokens
  CHECK(reported.overall_code() == rls::RateLimitResponse::OK);          // as limitador answers a report
  REQUIRE(reported.statuses_size() == 1);
  CHECK(reported.statuses(0).code() == rls::RateLimitResponse::OVER_LIMIT);  // it passed the budget
  CHECK_FALSE(kuadrant.admits(kAnn));
  REQUIRE(swl::test::eventually([&] { return kuadrant.admits(kAnn); }));  // slid out
  CHECK(std::chrono::steady_clock::now() - before >= std::chrono::milliseconds(990));
}

TEST_CASE(
    "Kuadrant's protocol answers as limitador's own tests expect: an empty domain, a limit of 0, every descriptor") {
  KuadrantClient kuadrant;
  CHECK(kuadrant.check({kAnn}, "").overall_code() == rls::RateLimitResponse::UNKNOWN);
  CHECK(kuadrant.check({{{"banned", "x"}}}).overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(kuadrant.check({{{"other", "y"}}}).overall_code() == rls::RateLimitResponse::OK);  // no limit applies
  // the second descriptor, limited to 0, refuses the whole request
  CHECK(kuadrant.check({{{"x", "1"}}, {{"banned", "x"}}}).overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(kuadrant.check({{{"x", "1"}}}).overall_code() == rls::RateLimitResponse::OK);
}

}  // namespace ratelimit_kuadrant_tests
