// swl-ratelimit's plan of a request (ratelimit/plan.hpp), without Redis: which descriptors are limited,
// what each costs and where it is counted, and the answer its decisions make. The server's own tests
// (test_ratelimit_service.cpp) decide the same requests in Redis.

#include <ratelimit/config.hpp>
#include <ratelimit/plan.hpp>

#include "support/ratelimit_requests.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace rls = envoy::service::ratelimit::v3;
using swl::ratelimit::Plan;
using swl::test::header;
using swl::test::request;
using namespace std::chrono_literals;

const swl::ratelimit::Configuration& configuration() {
  static const swl::ratelimit::Configuration made = [] {
    swl::ratelimit::Configuration configuration;
    configuration.add(swl::ratelimit::parseDomain(std::string(swl::test::kShopRules) + R"yaml(  - key: route
    rate_limit: {unit: hour, requests_per_unit: 100, name: routes, replaces: [{name: search}]}
  - key: bucket
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: gcra}
)yaml",
                                                  "plan.yaml"));
    return configuration;
  }();
  return made;
}

Plan planOf(const rls::RateLimitRequest& request) { return Plan(configuration(), request, "swlrl"); }

swl::Decision admitted(std::int64_t remaining) {
  swl::Decision decision;
  decision.allowed = true;
  decision.remaining = remaining;
  decision.reset_after = 60s;
  return decision;
}

swl::Decision refused(std::chrono::microseconds retry_after) {
  swl::Decision decision;
  decision.allowed = false;
  decision.retry_after = retry_after;
  decision.reset_after = 60s;
  return decision;
}

}  // namespace

TEST_CASE(
    "a plan counts each descriptor under a key of its domain's hash tag, its rule, how it is kept and its values") {
  Plan plan = planOf(request({{{"user", "alice"}}, {{"window", "w"}}, {{"bucket", "b"}}, {{"route", "/other"}}}));
  REQUIRE(plan.limited().size() == 4);
  CHECK(plan.limited()[0].redis_key == "swlrl:{shop}.user:5=alice");
  CHECK(plan.limited()[1].redis_key == "swlrl:{shop}.window:periods:1=w");
  CHECK(plan.limited()[2].redis_key == "swlrl:{shop}.bucket:gcra:1=b");
  CHECK(plan.limited()[3].redis_key == "swlrl:{shop}.route:6=/other");
  CHECK(plan.limited()[0].counting == "log");
  CHECK(plan.limited()[2].counting == "gcra");
  CHECK(plan.limited()[1].limit == swl::Limit{2, 1h});
  // A value can hold what would end another: lengths keep the two apart.
  CHECK(planOf(request({{{"user", "1=a"}}})).limited()[0].redis_key !=
        planOf(request({{{"user", "1"}}})).limited()[0].redis_key);
}

TEST_CASE(
    "a plan charges a descriptor its own hits_addend, else the request's, else 1, in units of its rule's weight") {
  auto costly = request({{{"user", "a"}}, {{"bulk", "b"}}, {{"user", "c"}}}, 2);
  costly.mutable_descriptors(2)->mutable_hits_addend()->set_value(3);
  Plan plan = planOf(costly);
  REQUIRE(plan.limited().size() == 3);
  CHECK(plan.limited()[0].hits == 2);
  CHECK(plan.limited()[1].hits == 2);
  CHECK(plan.limited()[1].limit == swl::Limit{2, 1min});  // 10 a minute at 5 a hit: 2 hits
  CHECK(plan.limited()[2].hits == 3);
  CHECK(planOf(request({{{"user", "a"}}})).limited()[0].hits == 1);
}

TEST_CASE("a plan leaves out what no rule limits, and what another matched rule replaces") {
  const Plan free = planOf(request({{{"internal", "x"}}, {{"nobody", "y"}}, {{"user", "a"}, {"extra", "z"}}}));
  CHECK_FALSE(free.asksRedis());
  // /search's own rule is replaced by the rule of every route when both match one request.
  Plan replaced = planOf(request({{{"route", "/search"}}, {{"route", "/other"}}}));
  REQUIRE(replaced.limited().size() == 1);
  CHECK(replaced.limited()[0].policy == "routes");
  CHECK(replaced.limited()[0].index == 1);
}

TEST_CASE("a plan's limit override is counted apart from its rule, in a log of the override's unit") {
  auto overridden = request({{{"user", "a"}}});
  overridden.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(7);
  overridden.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::HOUR);
  Plan plan = planOf(overridden);
  REQUIRE(plan.limited().size() == 1);
  CHECK(plan.limited()[0].rule == nullptr);
  CHECK(plan.limited()[0].limit == swl::Limit{7, 1h});
  CHECK(plan.limited()[0].redis_key == "swlrl:{shop}.user.override.hour:1=a");
}

TEST_CASE(
    "a plan's answer: each status, OVER_LIMIT when any enforced rule refused, and the longest wait as Retry-After") {
  Plan plan = planOf(request({{{"user", "a"}}, {{"route", "/other"}}, {{"trial", "t"}}, {{"internal", "x"}}}));
  REQUIRE(plan.limited().size() == 3);
  plan.limited()[0].decision = refused(1'500'000us);
  plan.limited()[1].decision = refused(30s);
  plan.limited()[2].decision = refused(90s);  // a shadow rule: reported OK, and never the binding wait
  const rls::RateLimitResponse response = std::move(plan).answer();
  REQUIRE(response.statuses_size() == 4);
  CHECK(response.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(response.statuses(0).code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(response.statuses(0).duration_until_reset().seconds() == 1);
  CHECK(response.statuses(0).duration_until_reset().nanos() == 500'000'000);
  CHECK(response.statuses(1).current_limit().name() == "routes");
  CHECK(response.statuses(2).code() == rls::RateLimitResponse::OK);
  CHECK(response.statuses(3).code() == rls::RateLimitResponse::OK);
  CHECK_FALSE(response.statuses(3).has_current_limit());
  CHECK(header(response, "retry-after") == "30");
  CHECK(header(response, "ratelimit-policy") == R"("shop.user";q=3;w=60, "routes";q=100;w=3600)");
}

TEST_CASE("a plan's answer gives remaining hits in units of the rule's weight, and no Retry-After when admitted") {
  Plan plan = planOf(request({{{"bulk", "b"}}, {{"bulk", "b"}}}));
  REQUIRE(plan.limited().size() == 2);
  plan.limited()[0].decision = admitted(1);
  plan.limited()[1].decision = admitted(1);  // the same counter twice: one policy in the headers
  const rls::RateLimitResponse response = std::move(plan).answer();
  CHECK(response.overall_code() == rls::RateLimitResponse::OK);
  CHECK(response.statuses(0).limit_remaining() == 5);
  CHECK(header(response, "retry-after").empty());
  CHECK(header(response, "ratelimit") == R"("shop.bulk";r=5;t=60)");
}
