// Token budgets behind Envoy (--charge-descriptor-hits): a check at the request (the descriptor's
// hits_addend 0) and a charge when the stream is done (its hits_addend the tokens used), as Envoy Gateway's
// response cost and Envoy AI Gateway send them. A charge is recorded whole even past the limit, so the
// budget binds; it frees as the window slides. envoyproxy/ratelimit's own token-quota expectations
// (integration-test/scripts/token-quota.sh and multiservice-tokenquota.sh, with its example.yaml's rules)
// are ported here. The server program, a real gRPC client and a private redis-server.

#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

// A namespace of its own: the test files of one program share a translation unit (tests/CMakeLists.txt).
namespace ratelimit_token_budget_tests {

namespace rls = envoy::service::ratelimit::v3;
using swl::test::Entries;
using swl::test::RateLimitProcess;
using swl::test::RedisServer;
using swl::test::TemporaryDirectory;

// envoyproxy/ratelimit's example rules for its token-quota tests (examples/ratelimit/config/example.yaml,
// its two quota rules), and budgets of our own: tokens an hour per model, and a second's for the slide.
constexpr const char* kBudgets = R"yaml(domain: ai
descriptors:
  - key: service
    value: service_1
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: service
    value: service_2
    quota_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 2
  - key: model
    rate_limit:
      unit: hour
      requests_per_unit: 1000
  - key: burst
    rate_limit:
      unit: second
      requests_per_unit: 100
)yaml";

class BudgetServer {
 public:
  explicit BudgetServer(const std::vector<std::string>& flags = {"--charge-descriptor-hits", "yes"})
      : process_(directory_.path() / "server.out", arguments(flags), {},
                 RateLimitProcess::Inherit::the_tests_environment) {}

  // One call for `descriptors`, each with its own hits_addend: 0 checks, more charges.
  rls::RateLimitResponse call(const std::vector<std::pair<Entries, std::uint64_t>>& descriptors) {
    std::vector<Entries> entries;
    for (const auto& each : descriptors) entries.push_back(each.first);
    rls::RateLimitRequest request = swl::test::request(entries, 0, "ai");
    for (std::size_t i = 0; i < descriptors.size(); ++i) {
      request.mutable_descriptors(static_cast<int>(i))->mutable_hits_addend()->set_value(descriptors[i].second);
    }
    rls::RateLimitResponse response;
    const grpc::Status status = process_.callStatus(request, response);
    INFO(status.error_message());
    REQUIRE(status.ok());
    return response;
  }

  // The status of a charge of `tokens` for `descriptor`, answered or not.
  grpc::Status chargeStatus(const Entries& descriptor, std::uint64_t tokens) {
    rls::RateLimitRequest request = swl::test::request({descriptor}, 0, "ai");
    request.mutable_descriptors(0)->mutable_hits_addend()->set_value(tokens);
    rls::RateLimitResponse response;
    return process_.callStatus(request, response);
  }

  // Envoy's check at the request: whether it is served.
  bool check(const Entries& descriptor) { return call({{descriptor, 0}}).overall_code() == rls::RateLimitResponse::OK; }
  // Envoy's charge when the stream is done: whether the charge stayed within the limit.
  bool charge(const Entries& descriptor, std::uint64_t tokens) {
    return call({{descriptor, tokens}}).overall_code() == rls::RateLimitResponse::OK;
  }

 private:
  std::vector<std::string> arguments(std::vector<std::string> flags) {
    flags.insert(flags.end(), {"--config", directory_.write("config/ai.yaml", kBudgets).string(), "--listen",
                               "127.0.0.1:0", "--redis", "127.0.0.1:" + std::to_string(redis_.port())});
    return flags;
  }

  TemporaryDirectory directory_;
  RedisServer redis_;
  RateLimitProcess process_;
};

const Entries kModel{{"model", "gpt"}};

TEST_CASE("a token budget binds: charges are recorded past the limit, and the checks after them are refused") {
  BudgetServer server;
  CHECK(server.check(kModel));
  CHECK(server.charge(kModel, 600));
  CHECK(server.check(kModel));              // 600 of 1,000 spent
  CHECK_FALSE(server.charge(kModel, 600));  // 1,200: passed the budget, said, and recorded all the same
  CHECK_FALSE(server.check(kModel));        // bound
  const rls::RateLimitResponse refused = server.call({{kModel, 0}});
  REQUIRE(refused.statuses_size() == 1);
  CHECK(refused.statuses(0).limit_remaining() == 0);
  CHECK(refused.statuses(0).current_limit().requests_per_unit() == 1000);
  CHECK(swl::test::microsecondsOf(refused.statuses(0).duration_until_reset()) > 3500LL * 1000 * 1000);
  CHECK_FALSE(server.charge(kModel, 600));  // a stream already under way still pays
  CHECK_FALSE(server.check(kModel));
  // A charge larger than the whole budget is recorded whole too.
  const Entries other{{"model", "other"}};
  CHECK_FALSE(server.charge(other, 2500));
  CHECK_FALSE(server.check(other));
}

TEST_CASE("a token budget frees as the window slides the charges out, exactly as much as slid") {
  BudgetServer server;
  const Entries burst{{"burst", "b"}};
  const auto before = std::chrono::steady_clock::now();  // the first charge is recorded after this
  CHECK(server.charge(burst, 70));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK_FALSE(server.charge(burst, 70));  // 140 of 100 in the last second
  CHECK_FALSE(server.check(burst));
  REQUIRE(swl::test::eventually([&] { return server.check(burst); }));  // the first 70 slid out
  CHECK(std::chrono::steady_clock::now() - before >= std::chrono::milliseconds(990));
  // 70 of 100 until the second charge slides out too (all 100 left once the machine was slower than that)
  CHECK(server.call({{burst, 0}}).statuses(0).limit_remaining() >= 30);
}

TEST_CASE("a charge too large to count exactly is refused with INVALID_ARGUMENT, and what was recorded stays") {
  BudgetServer server;
  CHECK(server.charge(kModel, 600));
  const grpc::Status huge = server.chargeStatus(kModel, std::uint64_t{1} << 60);
  CHECK(huge.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  INFO(huge.error_message());
  CHECK_FALSE(huge.error_message().empty());
  CHECK(server.call({{kModel, 0}}).statuses(0).limit_remaining() == 400);
}

TEST_CASE("without --charge-descriptor-hits a hit that passes the limit records nothing, as before") {
  BudgetServer server(std::vector<std::string>{});
  CHECK(server.charge(kModel, 600));
  CHECK_FALSE(server.charge(kModel, 600));
  CHECK(server.check(kModel));
  CHECK(server.call({{kModel, 0}}).statuses(0).limit_remaining() == 400);
}

TEST_CASE("envoyproxy/ratelimit's token-quota.sh: charged on the response path, the fourth request is refused") {
  BudgetServer server;
  const Entries service_2{{"service", "service_2"}};
  for (int request = 1; request <= 3; ++request) {
    INFO("request " << request);
    REQUIRE(server.check(service_2));  // "Quota limit should not trigger yet"
    server.charge(service_2, 1);       // apply_on_stream_done, hits_addend 1
  }
  CHECK_FALSE(server.check(service_2));  // "Quota limiting should fail the request"
}

TEST_CASE(
    "envoyproxy/ratelimit's multiservice-tokenquota.sh: two requests on service_1, three on service_2, then none") {
  BudgetServer server;
  const Entries service_1{{"service", "service_1"}};
  const Entries service_2{{"service", "service_2"}};
  std::vector<std::string> served_by;
  for (int request = 1; request <= 6; ++request) {
    // The request path checks both; Envoy routes to a service whose quota rule admitted (the locality the
    // peer's dynamic metadata names), and the response path charges the service that served.
    const rls::RateLimitResponse checked = server.call({{service_1, 0}, {service_2, 0}});
    if (checked.overall_code() != rls::RateLimitResponse::OK) {
      served_by.push_back("refused");
      continue;
    }
    const bool first = checked.statuses(0).code() == rls::RateLimitResponse::OK;
    served_by.push_back(first ? "service_1" : "service_2");
    server.charge(first ? service_1 : service_2, 1);
  }
  CHECK(served_by ==
        std::vector<std::string>{"service_1", "service_1", "service_2", "service_2", "service_2", "refused"});
}

}  // namespace ratelimit_token_budget_tests
