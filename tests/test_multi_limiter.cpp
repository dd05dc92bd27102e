// MultiLimiter: several limits decided in one EVALSHA, all or nothing, on a real redis-server.

#include <swl/swl.hpp>

#include "support/manual_time.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::ManualTime;
using swl::test::RedisServer;
using swl::test::textReply;

TEST_CASE("several limits under 8 threads: all or nothing, so the tightest binds and no rule pays for a refusal") {
  RedisServer server;
  swl::PoolOptions pool_options;
  pool_options.size = 8;
  pool_options.borrow_timeout = 5s;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), pool_options);
  swl::MultiLimiter<> limiter(pool, {{"user", swl::Limit{50, 60s}}, {"endpoint", swl::Limit{30, 60s}}});

  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 8; ++thread) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) admitted += limiter.tryAcquire({"user:1", "GET /search"}).decision.allowed;
    });
  }
  for (std::thread& thread : threads) thread.join();

  auto connection = server.connect();
  CHECK(admitted == 30);
  CHECK(logEntries(connection, "swl:user:user:1") == 30);  // not one entry for a refusal
  CHECK(logEntries(connection, "swl:endpoint:GET /search") == 30);
  CHECK(limiter.redisKey(0, "user:1") == "swl:user:user:1");

  // Another user meets the exhausted endpoint: refused, and their own log stays empty.
  const swl::MultiDecision refused = limiter.tryAcquire({"user:2", "GET /search"});
  CHECK_FALSE(refused);
  CHECK(refused.binding_name == "endpoint");
  CHECK(refused.rules[0].allowed);
  CHECK(refused.rules[0].remaining == 50);
  CHECK_FALSE(refused.rules[1].allowed);
  CHECK(integerReply(connection, {"EXISTS", "swl:user:user:2"}) == 0);
}

TEST_CASE_METHOD(ManualTime, "a refused multi-decision names the rule that refused and the longest wait") {
  swl::MultiLimiter<> limiter(connection, {{"second", swl::Limit{2, 1s}}, {"minute", swl::Limit{3, 60s}}}, options);
  const std::vector<std::string_view> keys{"user:42", "user:42"};

  CHECK(limiter.tryAcquire(keys));
  const swl::MultiDecision admitted = limiter.tryAcquire(keys);
  CHECK(admitted);
  CHECK(admitted.binding_name == "second");  // 0 left of 2, 1 left of 3
  CHECK(admitted.decision.remaining == 0);
  CHECK(admitted.rules[1].remaining == 1);

  swl::MultiDecision refused = limiter.tryAcquire(keys);
  CHECK_FALSE(refused);
  CHECK(refused.binding == 0);
  CHECK(refused.binding_name == "second");
  CHECK(refused.decision.retry_after == 1s);
  CHECK(refused.decision.limit == 2);
  CHECK(refused.rules[1].allowed);  // the minute would have admitted it, and recorded nothing
  CHECK(refused.rules[1].remaining == 1);

  clock.advance(1s);
  CHECK(limiter.tryAcquire(keys));  // the minute's third
  clock.advance(1s);
  refused = limiter.tryAcquire(keys);
  CHECK(refused.binding_name == "minute");
  CHECK(refused.decision.retry_after == 58s);

  // Both refuse: the longest wait binds, so waiting it out satisfies every rule.
  swl::MultiLimiter<> both(connection, {{"second", swl::Limit{1, 1s}}, {"minute", swl::Limit{1, 60s}}}, options,
                           "both");
  CHECK(both.tryAcquire(keys));
  refused = both.tryAcquire(keys);
  CHECK_FALSE(refused.rules[0].allowed);
  CHECK_FALSE(refused.rules[1].allowed);
  CHECK(refused.binding_name == "minute");
  CHECK(refused.decision.retry_after == 60s);
  clock.advance(refused.decision.retry_after);
  CHECK(both.tryAcquire(keys));
}

TEST_CASE("a multi-decision of cost above one is recorded whole in every rule, or not at all") {
  RedisServer server;
  auto connection = server.connect();
  swl::MultiLimiter<> limiter(connection, {{"a", swl::Limit{10, 60s}}, {"b", swl::Limit{6, 60s}}});
  CHECK(limiter.tryAcquire({"k", "k"}, 4));
  CHECK_FALSE(limiter.tryAcquire({"k", "k"}, 3));  // b has 2 left
  CHECK(logEntries(connection, "swl:a:k") == 1);   // one entry of four units
  const swl::MultiDecision last = limiter.tryAcquire({"k", "k"}, 2);
  CHECK(last);
  CHECK(last.rules[0].remaining == 4);
  CHECK(last.rules[1].remaining == 0);
  CHECK(logEntries(connection, "swl:b:k") == 2);  // 4 + 2 units in two entries
}

namespace {

// The units a rule's log holds for `key` now, read by a log limiter of its own over the same Redis key.
std::int64_t unitsInLog(swl::test::ManualTime& time, const std::string& rule, swl::Limit limit, std::string_view key) {
  swl::SlidingWindowLimiter<> log(time.connection, limit, time.options, swl::PrefixKey("swl:" + rule));
  return log.peek(key).used;
}

}  // namespace

TEST_CASE_METHOD(ManualTime, "costs per rule are recorded whole, each in its own rule's log, or in no log at all") {
  const swl::Limit user_limit{10, 60s}, endpoint_limit{6, 60s};
  swl::MultiLimiter<> limiter(connection, {{"user", user_limit}, {"endpoint", endpoint_limit}}, options);
  const std::vector<std::string_view> keys{"u", "GET /"};

  const swl::MultiDecision first = limiter.tryAcquire(keys, {4, 1});
  CHECK(first);
  CHECK(first.rules[0].remaining == 6);
  CHECK(first.rules[1].remaining == 5);
  CHECK(unitsInLog(*this, "user", user_limit, "u") == 4);
  CHECK(unitsInLog(*this, "endpoint", endpoint_limit, "GET /") == 1);
  CHECK(logEntries(connection, "swl:user:u") == 1);  // four units, one entry
  CHECK(logEntries(connection, "swl:endpoint:GET /") == 1);

  // The endpoint has room for 1 more but is asked for 6: refused, so the user's 2, which fit, are not recorded.
  clock.advance(1s);
  const swl::MultiDecision refused = limiter.tryAcquire(keys, {2, 6});
  CHECK_FALSE(refused);
  CHECK(refused.binding_name == "endpoint");
  CHECK(refused.rules[0].allowed);
  CHECK_FALSE(refused.rules[1].allowed);
  CHECK(unitsInLog(*this, "user", user_limit, "u") == 4);
  CHECK(unitsInLog(*this, "endpoint", endpoint_limit, "GET /") == 1);

  // Both fit to the last unit: each log takes its own cost.
  const swl::MultiDecision last = limiter.tryAcquire(keys, {6, 5});
  CHECK(last);
  CHECK(last.rules[0].remaining == 0);
  CHECK(last.rules[1].remaining == 0);
  CHECK(unitsInLog(*this, "user", user_limit, "u") == 10);
  CHECK(unitsInLog(*this, "endpoint", endpoint_limit, "GET /") == 6);
  CHECK(logEntries(connection, "swl:user:u") == 2);
  CHECK(logEntries(connection, "swl:endpoint:GET /") == 2);

  // One cost for every rule still reads as such, beside the braces of a cost per rule.
  CHECK_FALSE(limiter.tryAcquire(keys, 1));
  CHECK_FALSE(limiter.tryAcquire(keys, {1}));  // one cost for both rules, not a list of one cost for two
  CHECK_FALSE(limiter.tryAcquire(keys, 1, {user_limit, endpoint_limit}));
}

TEST_CASE_METHOD(ManualTime, "a rule refuses the cost asked of it, while another rule's smaller cost fits") {
  swl::MultiLimiter<> limiter(connection, {{"user", swl::Limit{10, 60s}}, {"endpoint", swl::Limit{6, 60s}}}, options);
  const std::vector<std::string_view> keys{"u", "GET /"};
  REQUIRE(limiter.tryAcquire(keys, {4, 1}));  // the user has 6 left, the endpoint 5
  clock.advance(1s);

  // The user has more room left than the endpoint, but is asked for more than it has: the user binds.
  const swl::MultiDecision by_user = limiter.tryAcquire(keys, {7, 1});
  CHECK_FALSE(by_user);
  CHECK(by_user.binding_name == "user");
  CHECK_FALSE(by_user.rules[0].allowed);
  CHECK(by_user.rules[0].remaining == 6);
  CHECK(by_user.rules[0].retry_after == 59s);  // 7 fit once the 4 units recorded 1 s ago leave
  CHECK(by_user.decision.retry_after == 59s);
  CHECK(by_user.rules[1].allowed);
  CHECK(by_user.rules[1].remaining == 5);
  CHECK(by_user.rules[1].retry_after == 0s);

  // The same two rules the other way round: the endpoint's own cost does not fit, the user's does.
  const swl::MultiDecision by_endpoint = limiter.tryAcquire(keys, {1, 6});
  CHECK_FALSE(by_endpoint);
  CHECK(by_endpoint.binding_name == "endpoint");
  CHECK(by_endpoint.rules[0].allowed);
  CHECK_FALSE(by_endpoint.rules[1].allowed);
  CHECK(by_endpoint.rules[1].retry_after == 59s);

  // Neither refusal was recorded: the costs that fit still fit.
  const swl::MultiDecision admitted = limiter.tryAcquire(keys, {6, 5});
  CHECK(admitted);
  CHECK(admitted.decision.remaining == 0);
}

TEST_CASE_METHOD(ManualTime, "a periodic rule counts its own cost beside a log's, all or nothing") {
  // Whole minutes, so that the quota's period is known from the manual clock alone.
  const swl::Periods minutes("whole minutes", 60s, [](std::chrono::microseconds now) {
    const std::chrono::microseconds start = now - now % std::chrono::microseconds(60s);
    return swl::Period{start, start + std::chrono::microseconds(60s)};
  });
  swl::MultiLimiter<> limiter(connection, {{"second", swl::Limit{5, 1s}}, {"quota", 8, minutes}}, options);
  const std::vector<std::string_view> keys{"u", "u"};

  const swl::MultiDecision first = limiter.tryAcquire(keys, {1, 5});
  CHECK(first);
  CHECK(first.rules[0].remaining == 4);
  CHECK(first.rules[1].remaining == 3);
  CHECK(textReply(connection, {"HGET", "swl:quota:u", "c"}) == "5");

  const swl::MultiDecision refused = limiter.tryAcquire(keys, {1, 4});
  CHECK_FALSE(refused);
  CHECK(refused.binding_name == "quota");
  CHECK(refused.rules[0].allowed);
  CHECK(textReply(connection, {"HGET", "swl:quota:u", "c"}) == "5");
  CHECK(unitsInLog(*this, "second", swl::Limit{5, 1s}, "u") == 1);

  const swl::MultiDecision last = limiter.tryAcquire(keys, {4, 3});
  CHECK(last);
  CHECK(last.rules[0].remaining == 0);
  CHECK(last.rules[1].remaining == 0);
  CHECK(textReply(connection, {"HGET", "swl:quota:u", "c"}) == "8");
}

TEST_CASE("bad costs per rule are refused with an InvalidArgument naming the rule, whatever the failure policy") {
  RedisServer server;
  auto connection = server.connect();
  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  swl::MultiLimiter<> limiter(connection, {{"a", swl::Limit{3, 1s}}, {"b", swl::Limit{5, 1s}}}, fail_open);
  const std::vector<std::string_view> keys{"k", "k"};

  CHECK_THROWS_WITH(limiter.tryAcquire(keys, {1, 6}),
                    Catch::Contains("rule 'b'") && Catch::Contains("cost 6 exceeds the limit of 5"));
  CHECK_THROWS_WITH(limiter.tryAcquire(keys, {4, 1}),
                    Catch::Contains("rule 'a'") && Catch::Contains("cost 4 exceeds the limit of 3"));
  CHECK_THROWS_WITH(limiter.tryAcquire(keys, {0, 1}),
                    Catch::Contains("rule 'a'") && Catch::Contains("cost 0 is not positive"));
  CHECK_THROWS_WITH(limiter.tryAcquire(keys, {1, -2}),
                    Catch::Contains("rule 'b'") && Catch::Contains("cost -2 is not positive"));
  CHECK_THROWS_WITH(limiter.tryAcquire(keys, std::vector<std::int64_t>{1}), Catch::Contains("1 costs for 2 rules"));
  CHECK_THROWS_WITH(limiter.tryAcquire(keys, {1, 1, 1}), Catch::Contains("3 costs for 2 rules"));
  // A cost per call's own limit: 4 fits a's limit of 4 for this call, 6 does not fit b's of 5.
  CHECK_THROWS_WITH(limiter.tryAcquire(keys, {4, 6}, {swl::Limit{4, 1s}, swl::Limit{5, 1s}}),
                    Catch::Contains("rule 'b'"));
  CHECK_THROWS_AS(limiter.validate(keys, {1, 6}), swl::InvalidArgument);
  CHECK_THROWS_AS(limiter.decide(keys, {4, 1}), swl::InvalidArgument);
  CHECK_NOTHROW(limiter.validate(keys, {3, 5}));
  CHECK(logEntries(connection, "swl:a:k") == 0);  // nothing was sent
}

TEST_CASE("Redis down: the failure policy and the observer answer each rule at its own cost") {
  RedisServer server;
  auto connection = server.connect();
  std::vector<std::int64_t> observed_costs;
  std::vector<std::string> observed_rules;
  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  fail_open.observer = [&](const swl::DecisionEvent& event) {
    observed_costs.push_back(event.cost);
    observed_rules.emplace_back(event.rule);
  };
  swl::MultiLimiter<> limiter(connection, {{"a", swl::Limit{3, 1s}}, {"b", swl::Limit{5, 1s}}}, fail_open);

  const swl::MultiDecision admitted = limiter.tryAcquire({"k", "k"}, {1, 4});
  REQUIRE(admitted);
  CHECK(admitted.binding_name == "b");  // 1 left of 5, 2 of 3
  server.stop();

  const swl::MultiDecision failed_open = limiter.tryAcquire({"k", "k"}, {2, 1});
  CHECK(failed_open);
  CHECK(failed_open.decision.tier == swl::Tier::fail_open);
  CHECK(failed_open.rules[0].remaining == 1);  // 3 - 2
  CHECK(failed_open.rules[1].remaining == 4);  // 5 - 1
  CHECK(failed_open.binding_name == "a");
  CHECK(observed_costs == std::vector<std::int64_t>{4, 2});  // the binding rule's cost, each time
  CHECK(observed_rules == std::vector<std::string>{"b", "a"});
}

TEST_CASE("bad multi-limits are refused with a named reason, and Redis down meets the failure policy") {
  RedisServer server;
  auto connection = server.connect();
  using Rules = std::vector<swl::Rule>;
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, Rules{}), Catch::Contains("0 rules"));
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, Rules(10, {"x", swl::Limit{1, 1s}})), Catch::Contains("10 rules"));
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, {{"x", swl::Limit{1, 1s}}, {"x", swl::Limit{2, 1s}}}),
                    Catch::Contains("share a name"));
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, {{"{x}", swl::Limit{1, 1s}}}), Catch::Contains("brace"));
  CHECK_THROWS_AS(swl::MultiLimiter<>(connection, {{"x", swl::Limit{0, 1s}}}), swl::InvalidArgument);

  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  swl::MultiLimiter<> limiter(connection, {{"a", swl::Limit{3, 1s}}, {"b", swl::Limit{5, 1s}}}, fail_open);
  CHECK_THROWS_WITH(limiter.tryAcquire({"k"}), Catch::Contains("1 keys for 2 rules"));
  CHECK_THROWS_WITH(limiter.tryAcquire({"k", ""}), Catch::Contains("the key is empty"));
  CHECK_THROWS_WITH(limiter.tryAcquire({"k", "k"}, 4), Catch::Contains("exceeds the limit of 3"));

  server.stop();
  const swl::MultiDecision decision = limiter.tryAcquire({"k", "k"});
  CHECK(decision);
  CHECK(decision.decision.tier == swl::Tier::fail_open);
  swl::MultiLimiter<> throwing(connection, {{"a", swl::Limit{3, 1s}}});
  CHECK_THROWS_AS(throwing.tryAcquire({"k"}), swl::ConnectionError);
}
