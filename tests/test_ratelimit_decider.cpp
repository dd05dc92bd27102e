// swl-ratelimit's Decider (ratelimit/decide/decider.hpp) against a real redis-server: the requests a deciding
// thread takes together, decided in one round trip per round (decideMany), answer exactly as each decided
// alone does, in the order they were taken, whatever the batch mixes: shadow refusals that take a second
// round, a descriptor that never fits, a request of too many descriptors, and one that asks Redis
// nothing. A request decided again (its shadow rules refused) is recorded after the batch's others.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/decide/decider.hpp>

#include "support/ratelimit_requests.hpp"
#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <exception>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace rls = envoy::service::ratelimit::v3;
using swl::ratelimit::Decider;
using swl::ratelimit::Plan;
using swl::test::Entries;
using swl::test::request;

// The shop's rules (windows of a minute or more) and a token bucket refilled every 15 minutes: a request
// decided in a batch and its twin decided alone a few milliseconds later find the same windows.
swl::ratelimit::Configuration shopConfiguration() {
  swl::ratelimit::Configuration configuration;
  configuration.add(swl::ratelimit::parseDomain(std::string(swl::test::kShopRules) + R"yaml(  - key: bucket
    rate_limit: {unit: hour, requests_per_unit: 4, algorithm: gcra}
  - key: many
    rate_limit: {unit: minute, requests_per_unit: 100}
)yaml",
                                                "decider.yaml"));
  return configuration;
}

// The request shapes a batch mixes, each naming what it reaches.
enum class Shape { user, user_and_search, user_and_trial, bulk, bucket_and_user, never_fits, too_many, unlimited };
constexpr int kShapes = 8;

rls::RateLimitRequest requestOf(Shape shape, const std::string& who) {
  switch (shape) {
    case Shape::user:
      return request({{{"user", who}}});
    case Shape::user_and_search:
      return request({{{"user", who}}, {{"route", "/search"}}});
    case Shape::user_and_trial:  // users of their own: see the last test for why
      return request({{{"user", "trying " + who}}, {{"trial", who}}});
    case Shape::bulk:
      return request({{{"bulk", who}}}, 1);
    case Shape::bucket_and_user:
      return request({{{"bucket", who}}, {{"user", who}}});
    case Shape::never_fits: {  // 4 of the user's 3 a minute: refused whole, and /search counts nothing
      auto costly = request({{{"user", who}}, {{"route", "/search"}}});
      costly.mutable_descriptors(0)->mutable_hits_addend()->set_value(4);
      return costly;
    }
    case Shape::too_many: {  // 10 counters: more than one decision takes
      std::vector<Entries> descriptors;
      for (int i = 0; i < 10; ++i) descriptors.push_back({{"many", who + std::to_string(i)}});
      return request(descriptors);
    }
    case Shape::unlimited:
      return request({{{"internal", who}}});
  }
  return {};
}

// What Envoy acts on in an answer, but its times (Redis's clock moves between a batch and its twins).
std::string verdictOf(const Decider::Answer& answer) {
  if (answer.error) return "error";
  std::string verdict = std::to_string(answer.response.overall_code());
  for (const auto& status : answer.response.statuses()) {
    verdict += " " + std::to_string(status.code()) + ":" + std::to_string(status.limit_remaining());
  }
  return verdict;
}

}  // namespace

TEST_CASE("plans decided together in one round trip answer as each decided alone, whatever the batch mixes") {
  swl::test::RedisServer server;
  auto connection = server.connect();
  const swl::ratelimit::Configuration configuration = shopConfiguration();
  // The same Redis under two prefixes: the batched decider's counters and their twins'.
  swl::ratelimit::DeciderOptions batched_options, alone_options;
  batched_options.key_prefix = "batched";
  alone_options.key_prefix = "alone";
  Decider batched(connection, batched_options), alone(connection, alone_options);

  std::mt19937 random(39);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  std::vector<int> shapes_decided(kShapes, 0);
  std::set<std::string> trials_used;
  int decisions = 0, over_limit = 0, shadow_refusals = 0, mixed_batches = 0;
  for (int round = 0; round < 120; ++round) {
    std::vector<rls::RateLimitRequest> requests;
    std::set<Shape> shapes;
    for (int i = pick(1, 8); i > 0; --i) {
      const auto shape = static_cast<Shape>(pick(0, kShapes - 1));
      const std::string who = "u" + std::to_string(pick(0, 5));
      requests.push_back(requestOf(shape, who));
      shapes.insert(shape);
      ++shapes_decided[static_cast<int>(shape)];
      // A trial used before refuses in shadow: the request is decided again without it.
      if (shape == Shape::user_and_trial && !trials_used.insert(who).second) ++shadow_refusals;
    }
    mixed_batches += shapes.size() > 2;

    std::vector<Plan> plans;
    for (const auto& each : requests) plans.push_back(batched.plan(configuration, each));
    const std::vector<Decider::Answer> answers = batched.decideMany(std::move(plans));
    REQUIRE(answers.size() == requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      Decider::Answer twin;
      try {
        twin.response = alone.decide(configuration, requests[i]);
      } catch (const swl::InvalidArgument&) {
        twin.error = std::current_exception();
      }
      INFO("round " << round << ", request " << i << ": " << requests[i].ShortDebugString());
      REQUIRE(verdictOf(answers[i]) == verdictOf(twin));
      ++decisions;
      over_limit += !answers[i].error && answers[i].response.overall_code() == rls::RateLimitResponse::OVER_LIMIT;
    }
  }
  std::string reached;
  for (int shape = 0; shape < kShapes; ++shape) reached += " " + std::to_string(shapes_decided[shape]);
  WARN(decisions << " decisions, " << over_limit << " over the limit; per shape:" << reached << "; " << shadow_refusals
                 << " requests whose shadow rule refused; " << mixed_batches << " batches of three shapes or more");
  for (int count : shapes_decided) CHECK(count > 20);
  CHECK(over_limit > 50);
  CHECK(shadow_refusals > 20);
  CHECK(mixed_batches > 30);
}

TEST_CASE("a request decided again without its refusing shadow rule is recorded after the others taken with it") {
  swl::test::RedisServer server;
  auto connection = server.connect();
  const swl::ratelimit::Configuration configuration = shopConfiguration();
  Decider decider(connection, {});
  // carol has 1 of her 3 left, and her trial is used up (its shadow rule refuses).
  for (int i = 0; i < 2; ++i)
    REQUIRE(decider.decide(configuration, request({{{"user", "carol"}}})).overall_code() == rls::RateLimitResponse::OK);
  REQUIRE(decider.decide(configuration, request({{{"trial", "carol"}}})).overall_code() == rls::RateLimitResponse::OK);

  // Taken together: the first needs a second round, without its trial; the second is decided in the first.
  std::vector<Plan> plans;
  plans.push_back(decider.plan(configuration, request({{{"user", "carol"}}, {{"trial", "carol"}}})));
  plans.push_back(decider.plan(configuration, request({{{"user", "carol"}}})));
  const std::vector<Decider::Answer> answers = decider.decideMany(std::move(plans));
  // The requests were in flight together, so either order is exact; the one decided once goes first.
  CHECK(answers[1].response.overall_code() == rls::RateLimitResponse::OK);
  CHECK(answers[1].response.statuses(0).limit_remaining() == 0);
  CHECK(answers[0].response.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(answers[0].response.statuses(1).code() == rls::RateLimitResponse::OK);  // the shadow rule never refuses
  // Three in all for carol: her limit, and no more.
  CHECK(decider.decide(configuration, request({{{"user", "carol"}}})).overall_code() ==
        rls::RateLimitResponse::OVER_LIMIT);
}

namespace {

// Rules of envoyproxy/ratelimit's own kinds: two quota rules, a blocked key (0 a minute) and a check.
swl::ratelimit::Configuration quotaConfiguration() {
  swl::ratelimit::Configuration configuration;
  configuration.add(swl::ratelimit::parseDomain(R"yaml(domain: quota
descriptors:
  - key: service
    value: one
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: service
    value: two
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: banned
    rate_limit: {unit: minute, requests_per_unit: 0}
)yaml",
                                                "quota.yaml"));
  return configuration;
}

// The request's overall code and, per descriptor, its code and what it has left.
std::string answered(Decider& decider, const swl::ratelimit::Configuration& configuration,
                     const rls::RateLimitRequest& asked) {
  return verdictOf({decider.decide(configuration, asked), nullptr});
}

rls::RateLimitRequest inQuota(const std::vector<Entries>& descriptors) { return request(descriptors, 0, "quota"); }

}  // namespace

TEST_CASE(
    "quota rules refuse a request only when all of them do, and the request a quota rule's refusal lets through is "
    "counted by the others") {
  swl::test::RedisServer server;
  auto connection = server.connect();
  const swl::ratelimit::Configuration configuration = quotaConfiguration();
  Decider decider(connection, {});
  const auto both = inQuota({{{"service", "one"}}, {{"service", "two"}}});
  // The overall code, then each status's code and what it has left (rls.proto's codes: OK 1, OVER_LIMIT 2).
  CHECK(answered(decider, configuration, both) == "1 1:0 1:1");  // both admit: one has 0 left, two 1
  CHECK(answered(decider, configuration, both) == "1 2:0 1:0");  // one refuses, two admits: OK overall
  CHECK(answered(decider, configuration, both) == "2 2:0 2:0");  // both refuse: OVER_LIMIT
  // Two recorded its second hit (the one that one refused), and no third.
  CHECK(answered(decider, configuration, inQuota({{{"service", "two"}}})) == "2 2:0");
}

TEST_CASE("SHADOW_MODE answers every request OK, each status saying what it got, and counts it where it was admitted") {
  swl::test::RedisServer server;
  auto connection = server.connect();
  const swl::ratelimit::Configuration configuration = quotaConfiguration();
  swl::ratelimit::DeciderOptions options;
  options.shadow_mode = true;
  Decider decider(connection, options);
  CHECK(answered(decider, configuration, inQuota({{{"banned", "x"}}, {{"user", "u"}}})) == "1 2:0 1:2");
  CHECK(answered(decider, configuration, inQuota({{{"user", "u"}}})) == "1 1:1");  // the first was served, counted
}

TEST_CASE("a limit of 0 refuses every hit without Redis, and a descriptor's hits_addend of 0 checks without counting") {
  swl::test::RedisServer server;
  auto connection = server.connect();
  const swl::ratelimit::Configuration configuration = quotaConfiguration();
  Decider decider(connection, {});
  // The refused request counted nothing, and u's status says what it has, as it stands.
  CHECK(answered(decider, configuration, inQuota({{{"banned", "x"}}, {{"user", "u"}}})) == "2 2:0 1:3");
  auto check = inQuota({{{"user", "u"}}});
  check.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  CHECK(answered(decider, configuration, check) == "1 1:3");
  CHECK(answered(decider, configuration, inQuota({{{"user", "u"}}})) == "1 1:2");
  CHECK(answered(decider, configuration, check) == "1 1:2");  // checked twice, counted once
  auto banned_check = inQuota({{{"banned", "x"}}});
  banned_check.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  CHECK(answered(decider, configuration, banned_check) == "1 1:0");  // a check of 0: OK, nothing left
  // A full limit checked: OK, nothing left, as envoyproxy/ratelimit answers a check that would not fit.
  for (int i = 0; i < 2; ++i) answered(decider, configuration, inQuota({{{"user", "u"}}}));
  CHECK(answered(decider, configuration, check) == "1 1:0");
}
