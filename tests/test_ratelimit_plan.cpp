// swl-ratelimit's plan of a request (ratelimit/decide/plan.hpp), without Redis: which descriptors are limited,
// what each costs and where it is counted, and the answer its decisions make. The server's own tests
// (test_ratelimit_service.cpp) decide the same requests in Redis.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/decide/plan.hpp>

#include "support/ratelimit_requests.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <random>
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
  - key: staff
    rate_limit: {unlimited: true, replaces: [{name: routes}]}
  - key: banned
    rate_limit: {unit: minute, requests_per_unit: 0}
)yaml",
                                                  "plan.yaml"));
    // Domains whose text holds what joins a key's parts: each must still count apart.
    configuration.add(swl::ratelimit::parseDomain(R"yaml(domain: a
descriptors:
  - key: k}.z
    rate_limit: {unit: hour, requests_per_unit: 2}
)yaml",
                                                  "a.yaml"));
    configuration.add(swl::ratelimit::parseDomain(R"yaml(domain: a}.k
descriptors:
  - key: z
    rate_limit: {unit: hour, requests_per_unit: 2}
)yaml",
                                                  "a-k.yaml"));
    return configuration;
  }();
  return made;
}

const swl::ratelimit::DeciderOptions kOptions;

Plan planOf(const rls::RateLimitRequest& request) { return Plan(configuration(), request, kOptions); }

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
  CHECK(plan.limited()[0].redis_key == "swlrl:{4=shop}:log:4=user:0=:5=alice");
  CHECK(plan.limited()[1].redis_key == "swlrl:{4=shop}:periods:6=window:0=:1=w");
  CHECK(plan.limited()[2].redis_key == "swlrl:{4=shop}:gcra:6=bucket:0=:1=b");
  CHECK(plan.limited()[3].redis_key == "swlrl:{4=shop}:log:5=route:0=:6=/other");
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
  CHECK(plan.limited()[0].redis_key == "swlrl:{4=shop}:override:hour:4=user:1=a");
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

TEST_CASE("a request with no domain or no descriptor, or past a bound, is refused with an InvalidArgument naming it") {
  const auto refusal = [](const rls::RateLimitRequest& asked) {
    try {
      planOf(asked);
    } catch (const swl::InvalidArgument& error) {
      return std::string(error.what());
    }
    return std::string("planned");
  };
  CHECK_THAT(refusal(request({{{"user", "a"}}}, 0, "")), Catch::Contains("no domain"));
  CHECK_THAT(refusal(request({})), Catch::Contains("no descriptor"));
  CHECK_THAT(refusal(request({{}})), Catch::Contains("descriptor 0 has no entry"));
  CHECK_THAT(refusal(request({{{"user", "a"}}}, 0, std::string(257, 'd'))), Catch::Contains("at most 256"));
  CHECK_THAT(refusal(request({{{"user", std::string(4097, 'v')}}})), Catch::Contains("value of 4097 bytes"));
  CHECK_THAT(refusal(request({{{std::string(257, 'k'), "v"}}})), Catch::Contains("key of 257 bytes"));
  CHECK_THAT(refusal(request({{{"", "v"}}})), Catch::Contains("empty key"));
  CHECK_THAT(refusal(request(std::vector<swl::test::Entries>(65, {{"user", "a"}}))), Catch::Contains("at most 64"));
  CHECK_THAT(refusal(request({swl::test::Entries(33, {"user", "a"})})), Catch::Contains("33 entries"));
  // At the bounds themselves, planned.
  CHECK(refusal(request({{{std::string(256, 'k'), std::string(4096, 'v')}}}, 0, std::string(256, 'd'))) == "planned");
}

TEST_CASE("an unlimited descriptor is OK with 4294967295 remaining, and what it replaces counts nothing") {
  Plan plan = planOf(request({{{"staff", "s"}}, {{"route", "/other"}}, {{"user", "u"}}}));
  REQUIRE(plan.limited().size() == 1);  // routes is replaced by the unlimited staff rule
  CHECK(plan.limited()[0].policy == "shop.user");
  plan.limited()[0].decision = admitted(2);
  const rls::RateLimitResponse response = std::move(plan).answer();
  CHECK(response.statuses(0).code() == rls::RateLimitResponse::OK);
  CHECK(response.statuses(0).limit_remaining() == 4294967295u);
  CHECK_FALSE(response.statuses(0).has_current_limit());
  CHECK(response.statuses(1).limit_remaining() == 0);  // replaced: no limit at all
  CHECK_FALSE(response.statuses(1).has_current_limit());
}

TEST_CASE(
    "a limit override applies only on a configured domain, one of 0 hits is a limit of 0, and one of no unit Envoy "
    "has is refused") {
  const auto overriding = [](std::uint32_t requests, envoy::type::v3::RateLimitUnit unit, const std::string& domain) {
    auto asked = request({{{"user", "a"}}}, 0, domain);
    asked.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(requests);
    asked.mutable_descriptors(0)->mutable_limit()->set_unit(unit);
    return asked;
  };
  CHECK_FALSE(planOf(overriding(7, envoy::type::v3::HOUR, "nowhere")).asksRedis());
  Plan zero = planOf(overriding(0, envoy::type::v3::HOUR, "shop"));
  REQUIRE(zero.limited().size() == 1);
  CHECK(zero.limited()[0].limit.max_requests == 0);
  CHECK_THROWS_AS(planOf(overriding(7, envoy::type::v3::UNKNOWN, "shop")), swl::InvalidArgument);
}

TEST_CASE("a descriptor's hits_addend of 0 checks its counter without counting, and the request's 0 counts 1") {
  auto checking = request({{{"user", "a"}}, {{"route", "/other"}}}, 0);
  checking.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  Plan plan = planOf(checking);
  REQUIRE(plan.limited().size() == 2);
  CHECK(plan.limited()[0].checks_only);
  CHECK(plan.limited()[0].hits == 0);
  CHECK_FALSE(plan.limited()[1].checks_only);
  CHECK(plan.limited()[1].hits == 1);
  // A limit of 0 refuses a hit, and a check of it is OK.
  Plan banned = planOf(request({{{"banned", "b"}}}));
  REQUIRE(banned.limited().size() == 1);
  CHECK(banned.limited()[0].limit.max_requests == 0);
}

TEST_CASE("no two different descriptors, rules or domains share a counter: the known collisions and a random search") {
  const auto keyOf = [](const rls::RateLimitRequest& asked) { return planOf(asked).limited().at(0).redis_key; };
  const auto overridden = [](const swl::test::Entries& entries) {
    auto asked = request({entries});
    asked.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(2);
    asked.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::HOUR);
    return asked;
  };
  CHECK(keyOf(overridden({{"a.b", "x"}, {"c", "y"}})) != keyOf(overridden({{"a", "x"}, {"b.c", "y"}})));
  CHECK(keyOf(request({{{"k}.z", "v"}}}, 0, "a")) != keyOf(request({{{"z", "v"}}}, 0, "a}.k")));

  // Entries of one or two levels over an alphabet of the characters that join a key's parts: every
  // different descriptor a different key.
  std::minstd_rand random(51);
  const std::string alphabet = "ab.:={}_1";
  const auto text = [&](std::size_t most) {
    std::string made;
    for (std::size_t n = random() % (most + 1); n > 0; --n) made += alphabet[random() % alphabet.size()];
    return made;
  };
  std::map<std::string, std::string> descriptor_of_key;
  int compared = 0, collisions = 0, two_levels = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string key = text(3);
    if (key.empty()) key = "k";  // Envoy's keys are not empty
    swl::test::Entries entries{{key, text(4)}};
    if (random() % 2 == 0) {
      entries.push_back({"x" + text(3), text(4)});
      ++two_levels;
    }
    std::string identity;
    for (const auto& [key, value] : entries) identity += "(" + key + "|" + value + ")";
    const auto [at, fresh] = descriptor_of_key.emplace(keyOf(overridden(entries)), identity);
    ++compared;
    if (!fresh && at->second != identity) ++collisions;
  }
  INFO(compared << " descriptors (" << two_levels << " of two levels), " << descriptor_of_key.size() << " distinct");
  CHECK(collisions == 0);
  CHECK(descriptor_of_key.size() > 1000);
}

TEST_CASE("LIMIT_RESPONSE_HEADERS_ENABLED adds the limit, remaining and reset of the descriptor nearest its limit") {
  swl::ratelimit::DeciderOptions options;
  options.limit_headers.enabled = true;
  options.limit_headers.remaining = "X-Left";
  Plan plan(configuration(), request({{{"user", "a"}}, {{"route", "/other"}}}), options);
  plan.limited()[0].decision = admitted(1);
  plan.limited()[1].decision = admitted(50);
  rls::RateLimitResponse response = std::move(plan).answer();
  CHECK(header(response, "RateLimit-Limit") == "3");
  CHECK(header(response, "X-Left") == "1");
  CHECK(header(response, "RateLimit-Reset") == "60");
  // A refusal is the one told of, whatever its count.
  Plan refusing(configuration(), request({{{"user", "a"}}, {{"route", "/other"}}}), options);
  refusing.limited()[0].decision = admitted(0);
  refusing.limited()[1].decision = refused(30s);
  response = std::move(refusing).answer();
  CHECK(header(response, "RateLimit-Limit") == "100");
  CHECK(header(response, "X-Left") == "0");
  CHECK(header(response, "RateLimit-Reset") == "30");
}

TEST_CASE("quota mode: a request is refused only when every quota descriptor is, and SHADOW_MODE refuses none") {
  swl::ratelimit::DeciderOptions quota;
  quota.quota_mode = true;
  Plan one_of_two(configuration(), request({{{"user", "a"}}, {{"route", "/other"}}}), quota);
  one_of_two.limited()[0].decision = refused(10s);
  one_of_two.limited()[1].decision = admitted(5);
  CHECK_FALSE(one_of_two.refused());
  rls::RateLimitResponse response = std::move(one_of_two).answer();
  CHECK(response.overall_code() == rls::RateLimitResponse::OK);
  CHECK(response.statuses(0).code() == rls::RateLimitResponse::OVER_LIMIT);  // each status says what it got
  Plan both(configuration(), request({{{"user", "a"}}, {{"route", "/other"}}}), quota);
  both.limited()[0].decision = refused(10s);
  both.limited()[1].decision = refused(20s);
  CHECK(both.refused());
  CHECK(std::move(both).answer().overall_code() == rls::RateLimitResponse::OVER_LIMIT);

  swl::ratelimit::DeciderOptions shadow;
  shadow.shadow_mode = true;
  Plan shadowed(configuration(), request({{{"user", "a"}}}), shadow);
  shadowed.limited()[0].decision = refused(10s);
  CHECK_FALSE(shadowed.refused());
  response = std::move(shadowed).answer();
  CHECK(response.overall_code() == rls::RateLimitResponse::OK);
  CHECK(response.statuses(0).code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(header(response, "retry-after").empty());
}
