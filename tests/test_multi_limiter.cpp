// MultiLimiter: several limits decided in one EVALSHA, all or nothing, on a real redis-server.

#include <swl/swl.hpp>

#include "support/decisions.hpp"
#include "support/manual_time.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::ManualTime;
using swl::test::RedisServer;
using swl::test::sameDecision;
using swl::test::textReply;

namespace {

// Whole minutes, so that a quota's period is known from the manual clock alone.
swl::Periods wholeMinutes() {
  return swl::Periods("whole minutes", 60s, [](std::chrono::microseconds now) {
    const std::chrono::microseconds start = now - now % std::chrono::microseconds(60s);
    return swl::Period{start, start + std::chrono::microseconds(60s)};
  });
}

}  // namespace

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
  const swl::Periods minutes = wholeMinutes();
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

namespace {

// A GCRA rule's key as Redis holds it, "tat frac limit" (Gcra::kFunctions), or "" when there is none.
std::string gcraState(swl::Connection& connection, const std::string& redis_key) {
  return textReply(connection, {"GET", redis_key});
}

// The state a GCRA key holds once its arrival time is `tat` + `frac`/`limit` microseconds.
std::string gcraStateAt(std::chrono::microseconds tat, std::int64_t frac, std::int64_t limit) {
  return std::to_string(tat.count()) + " " + std::to_string(frac) + " " + std::to_string(limit);
}

}  // namespace

TEST_CASE_METHOD(ManualTime,
                 "a GCRA rule beside a log, all or nothing: a refusal by either records nothing in the other") {
  const swl::Limit bucket{4, 1s}, minute{6, 60s};
  swl::MultiLimiter<> limiter(connection, {swl::Rule::gcra("burst", bucket), {"minute", minute}}, options);
  const std::vector<std::string_view> keys{"u", "u"};
  const std::chrono::microseconds start = clock.now();

  // The whole burst at once, at its own cost: the arrival time moves a second ahead (4 units of 250 ms).
  const swl::MultiDecision burst = limiter.tryAcquire(keys, {4, 1});
  REQUIRE(burst);
  CHECK(burst.rules[0].remaining == 0);
  CHECK(burst.rules[0].reset_after == 1s);
  CHECK(burst.rules[1].remaining == 5);
  const std::string after_burst = gcraStateAt(start + 1s, 0, 4);
  CHECK(gcraState(connection, "swl:burst:u") == after_burst);

  // The bucket refuses one more unit; the minute would admit it, and records nothing.
  const swl::MultiDecision by_bucket = limiter.tryAcquire(keys, {1, 1});
  CHECK_FALSE(by_bucket);
  CHECK(by_bucket.binding_name == "burst");
  CHECK_FALSE(by_bucket.rules[0].allowed);
  CHECK(by_bucket.rules[0].retry_after == 250ms);  // one unit comes back every 250 ms
  CHECK(by_bucket.rules[1].allowed);
  CHECK(by_bucket.rules[1].remaining == 5);
  CHECK(unitsInLog(*this, "minute", minute, "u") == 1);
  CHECK(gcraState(connection, "swl:burst:u") == after_burst);

  // 250 ms on, one unit is back: the bucket would admit 1, but the minute refuses its own cost of 6 (5
  // left), so the bucket's arrival time stays where it was.
  clock.advance(250ms);
  const swl::MultiDecision by_log = limiter.tryAcquire(keys, {1, 6});
  CHECK_FALSE(by_log);
  CHECK(by_log.binding_name == "minute");
  CHECK(by_log.rules[0].allowed);
  CHECK(by_log.rules[0].remaining == 1);
  CHECK_FALSE(by_log.rules[1].allowed);
  CHECK(gcraState(connection, "swl:burst:u") == after_burst);
  CHECK(unitsInLog(*this, "minute", minute, "u") == 1);

  // Both fit to the last unit: each records its own cost.
  const swl::MultiDecision both = limiter.tryAcquire(keys, {1, 5});
  CHECK(both);
  CHECK(both.rules[0].remaining == 0);
  CHECK(both.rules[1].remaining == 0);
  CHECK(gcraState(connection, "swl:burst:u") == gcraStateAt(start + 1250ms, 0, 4));
  CHECK(unitsInLog(*this, "minute", minute, "u") == 6);

  // Both refuse: the longer wait binds, the minute's (the entry of 1 unit leaves 60 s after it came).
  const swl::MultiDecision neither = limiter.tryAcquire(keys, {1, 1});
  CHECK_FALSE(neither.rules[0].allowed);
  CHECK_FALSE(neither.rules[1].allowed);
  CHECK(neither.rules[0].retry_after == 250ms);
  CHECK(neither.binding_name == "minute");
  CHECK(neither.decision.retry_after == 60s - 250ms);
  CHECK(gcraState(connection, "swl:burst:u") == gcraStateAt(start + 1250ms, 0, 4));
}

TEST_CASE_METHOD(ManualTime, "a GCRA rule refills one unit every window/limit, to the fraction of a microsecond") {
  // 3 a second: a unit comes back every 333,333 1/3 us.
  swl::MultiLimiter<> limiter(connection, {{"roomy", swl::Limit{1000, 1s}}, swl::Rule::gcra("g", swl::Limit{3, 1s})},
                              options);
  const std::vector<std::string_view> keys{"k", "k"};
  const std::chrono::microseconds start = clock.now();
  REQUIRE(limiter.tryAcquire(keys, {1, 3}));
  CHECK(gcraState(connection, "swl:g:k") == gcraStateAt(start + 1s, 0, 3));

  clock.advance(333'333us);  // a third of a microsecond short of one unit
  const swl::MultiDecision early = limiter.tryAcquire(keys);
  CHECK_FALSE(early);
  CHECK(early.binding_name == "g");
  CHECK(early.rules[1].remaining == 0);
  CHECK(early.rules[1].retry_after == 1us);
  clock.advance(1us);
  const swl::MultiDecision refilled = limiter.tryAcquire(keys);
  CHECK(refilled);
  CHECK(refilled.rules[1].remaining == 0);
  // One unit past the burst's end: 1 s + 333,333 1/3 us, kept as the whole and the third.
  CHECK(gcraState(connection, "swl:g:k") == gcraStateAt(start + 1'333'333us, 1, 3));
  CHECK(refilled.rules[1].reset_after == 1s);  // the third of a microsecond waits a whole one

  // Two thirds of the window later two units are back, not the whole burst.
  clock.advance(666'667us);
  CHECK_FALSE(limiter.tryAcquire(keys, {1, 3}));
  const swl::MultiDecision two = limiter.tryAcquire(keys, {1, 2});
  CHECK(two);
  CHECK(two.rules[1].remaining == 0);
  CHECK_FALSE(limiter.tryAcquire(keys));
}

TEST_CASE_METHOD(ManualTime, "a GCRA rule answers as GcraLimiter does and keeps its key the same way") {
  const bool counted = GENERATE(false, true);
  INFO((counted ? "refusals counted" : "refusals free"));
  if (counted) options.rejected = swl::RejectedRequests::counted;
  const swl::Limit bucket{3, 1s};
  swl::MultiLimiter<> limiter(connection, {swl::Rule::gcra("g", bucket), {"roomy", swl::Limit{1000, 1s}}}, options);
  swl::GcraLimiter<> single(connection, bucket, options, swl::PrefixKey("single"));
  swl::GcraLimiter<> reader(connection, bucket, options, swl::PrefixKey("swl:g"));  // the rule's own key

  const std::int64_t costs[] = {3, 1, 1, 2, 1, 3, 1, 2, 2, 1, 1, 3};
  const std::chrono::microseconds waits[] = {0us, 0us, 333'333us, 1us, 100ms, 1s, 333'334us, 0us, 500ms, 2s, 1us, 0us};
  for (std::size_t step = 0; step < std::size(costs); ++step) {
    INFO("step " << step << ": cost " << costs[step]);
    clock.advance(waits[step]);
    const swl::Decision alone = single.tryAcquire("k", costs[step]);
    const swl::MultiDecision multi = limiter.tryAcquire({"k", "k"}, {costs[step], 1});
    CHECK(multi.rules[0].allowed == alone.allowed);
    CHECK(multi.rules[0].remaining == alone.remaining);
    CHECK(multi.rules[0].retry_after == alone.retry_after);
    CHECK(multi.rules[0].reset_after == alone.reset_after);
    CHECK(gcraState(connection, "swl:g:k") == gcraState(connection, "single:k"));
    CHECK(reader.peek("k").used == single.peek("k").used);
  }
}

TEST_CASE_METHOD(ManualTime,
                 "a GCRA rule's key lives as long as the TTL policy says, and while its arrival time is ahead") {
  options.rejected = swl::RejectedRequests::counted;
  swl::MultiLimiter<> limiter(connection, {swl::Rule::gcra("g", swl::Limit{2, 1s})}, options);
  REQUIRE(limiter.tryAcquire({"k"}));  // half a second ahead: the window's TTL is longer
  CHECK(integerReply(connection, {"PTTL", "swl:g:k"}) > 900);
  CHECK(integerReply(connection, {"PTTL", "swl:g:k"}) <= 1000);
  REQUIRE(limiter.tryAcquire({"k"}));
  for (int i = 0; i < 4; ++i) REQUIRE_FALSE(limiter.tryAcquire({"k"}));  // counted: three seconds ahead
  CHECK(integerReply(connection, {"PTTL", "swl:g:k"}) > 2900);
  CHECK(integerReply(connection, {"PTTL", "swl:g:k"}) <= 3001);
}

TEST_CASE_METHOD(ManualTime, "a GCRA rule under a limit per call carries its past as time owed, as GcraLimiter does") {
  const swl::Limit own{10, 1s}, raised{20, 1s};
  swl::MultiLimiter<> limiter(connection, {{"log", swl::Limit{100, 1s}}, swl::Rule::gcra("g", own)}, options);
  const std::vector<std::string_view> keys{"k", "k"};
  for (int i = 0; i < 5; ++i) REQUIRE(limiter.tryAcquire(keys));
  // Five units at 10 a second owe half a second; at 20 a second each unit owes 50 ms: ten more fit.
  int admitted = 0;
  while (limiter.tryAcquire(keys, 1, {swl::Limit{100, 1s}, raised})) ++admitted;
  CHECK(admitted == 10);
  const swl::MultiDecision refused = limiter.tryAcquire(keys, 1, {swl::Limit{100, 1s}, raised});
  CHECK(refused.rules[1].limit == 20);
  CHECK(refused.rules[1].retry_after == 50ms);
  CHECK(unitsInLog(*this, "log", swl::Limit{100, 1s}, "k") == 15);  // the refusals recorded nothing

  // A fraction owed under one limit is rounded up under another: 1 s / 3 leaves a third of a microsecond.
  const std::vector<std::string_view> other{"f", "f"};
  REQUIRE(limiter.tryAcquire(other, 1, {swl::Limit{100, 1s}, swl::Limit{3, 1s}}));
  REQUIRE(limiter.tryAcquire(other, 1, {swl::Limit{100, 1s}, swl::Limit{2, 1s}}));  // 333,334 + 500,000 us
  const swl::MultiDecision after = limiter.tryAcquire(other, 1, {swl::Limit{100, 1s}, swl::Limit{1, 1s}});
  CHECK_FALSE(after);
  CHECK(after.rules[1].retry_after == 833'334us);
}

TEST_CASE("GCRA rules refuse limits they cannot count exactly, and periods, naming the rule") {
  RedisServer server;
  auto connection = server.connect();
  const swl::Limit too_fine{std::int64_t{1} << 40, 1'000'000s};
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, {{"log", too_fine}, swl::Rule::gcra("g", too_fine)}),
                    Catch::Contains("the gcra rule 'g'") && Catch::Contains("too fine to count exactly"));
  const swl::Periods minutes = wholeMinutes();
  swl::Rule with_periods("day", 10, minutes);
  with_periods.algorithm = swl::RuleAlgorithm::gcra;
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, {with_periods}),
                    Catch::Contains("'day'") && Catch::Contains("a rule is one or the other"));

  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  swl::MultiLimiter<> limiter(connection, {{"log", swl::Limit{3, 1s}}, swl::Rule::gcra("g", swl::Limit{3, 1s})},
                              fail_open);
  CHECK_THROWS_WITH(limiter.tryAcquire({"k", "k"}, 1, {swl::Limit{3, 1s}, too_fine}),
                    Catch::Contains("the gcra rule 'g'") && Catch::Contains("2^53"));
  CHECK_NOTHROW(limiter.validate({"k", "k"}, 1, {too_fine, swl::Limit{3, 1s}}));  // a log keeps any limit
}

TEST_CASE("Redis down: the failure policy answers a GCRA rule at its own cost, as it answers a log") {
  RedisServer server;
  auto connection = server.connect();
  const std::vector<swl::Rule> rules{swl::Rule::gcra("g", swl::Limit{4, 1s}), {"log", swl::Limit{6, 60s}}};
  swl::LimiterOptions fail_open, fail_closed;
  fail_open.on_failure = swl::FailurePolicy::allow;
  fail_closed.on_failure = swl::FailurePolicy::deny;
  swl::MultiLimiter<> opens(connection, rules, fail_open), closes(connection, rules, fail_closed),
      throws(connection, rules);
  REQUIRE(opens.tryAcquire({"k", "k"}, {3, 1}).decision.tier == swl::Tier::redis);
  server.stop();

  const swl::MultiDecision opened = opens.tryAcquire({"k", "k"}, {3, 1});
  CHECK(opened);
  CHECK(opened.decision.tier == swl::Tier::fail_open);
  CHECK(opened.rules[0].remaining == 1);  // 4 - 3
  CHECK(opened.rules[1].remaining == 5);  // 6 - 1
  CHECK(opened.binding_name == "g");
  const swl::MultiDecision closed = closes.tryAcquire({"k", "k"}, {3, 1});
  CHECK_FALSE(closed);
  CHECK(closed.decision.tier == swl::Tier::fail_closed);
  CHECK_THROWS_AS(throws.tryAcquire({"k", "k"}, {3, 1}), swl::ConnectionError);
}

TEST_CASE("over maxmemory a decision with a GCRA rule writes nothing, whichever rule comes first") {
  RedisServer server({"--maxmemory-policy", "noeviction"});
  auto connection = server.connect();
  swl::MultiLimiter<> gcra_first(connection, {swl::Rule::gcra("g", swl::Limit{4, 1s}), {"log", swl::Limit{6, 60s}}});
  swl::MultiLimiter<> log_first(connection, {{"log", swl::Limit{6, 60s}}, swl::Rule::gcra("g", swl::Limit{4, 1s})});
  REQUIRE(gcra_first.tryAcquire({"a", "a"}));  // loads the script while there is room
  REQUIRE(log_first.tryAcquire({"b", "b"}));
  const std::string gcra_a = gcraState(connection, "swl:g:a"), gcra_b = gcraState(connection, "swl:g:b");

  // 2 MB of data, then a 1 MB cap: the server stays above it, whatever its buffers do meanwhile.
  const std::string ballast(64 * 1024, 'x');
  for (int i = 0; i < 32; ++i) textReply(connection, {"SET", "ballast:" + std::to_string(i), ballast});
  textReply(connection, {"CONFIG", "SET", "maxmemory", "1mb"});
  CHECK_THROWS_WITH(gcra_first.tryAcquire({"a", "a"}), Catch::Contains("OOM"));
  CHECK_THROWS_WITH(log_first.tryAcquire({"b", "b"}), Catch::Contains("OOM"));
  textReply(connection, {"CONFIG", "SET", "maxmemory", "0"});

  CHECK(gcraState(connection, "swl:g:a") == gcra_a);
  CHECK(gcraState(connection, "swl:g:b") == gcra_b);
  CHECK(logEntries(connection, "swl:log:a") == 1);
  CHECK(logEntries(connection, "swl:log:b") == 1);
}

namespace {

bool sameMultiDecision(const swl::MultiDecision& a, const swl::MultiDecision& b) {
  if (a.binding != b.binding || a.rules.size() != b.rules.size() || !sameDecision(a.decision, b.decision)) return false;
  for (std::size_t i = 0; i < a.rules.size(); ++i) {
    if (!sameDecision(a.rules[i], b.rules[i])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE_METHOD(
    ManualTime, "decisions of two multi-limiters prepared apart and sent in one runMany are tryAcquire's, one by one") {
  // Each limiter has a twin under another prefix, decided by tryAcquire in the same order: the oracle.
  const std::vector<swl::Rule> rules_a{{"second", swl::Limit{5, 1s}}, swl::Rule::gcra("burst", swl::Limit{4, 1s})};
  const std::vector<swl::Rule> rules_b{{"minute", swl::Limit{7, 60s}}};
  swl::MultiLimiter<> batched_a(connection, rules_a, options, "batched"), twin_a(connection, rules_a, options, "twin");
  swl::MultiLimiter<> batched_b(connection, rules_b, options, "batched"), twin_b(connection, rules_b, options, "twin");
  const std::vector<std::string> users{"ann", "bob", "cy"};

  std::mt19937 random(20261127);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  int decisions = 0, admitted = 0, refused = 0, batches_of_both = 0, largest_batch = 0;
  for (int round = 0; round < 150; ++round) {
    struct Request {
      bool of_a;
      std::vector<std::string_view> keys;
      std::vector<std::int64_t> costs;
    };
    std::vector<Request> requests(static_cast<std::size_t>(pick(1, 8)));
    bool has_a = false, has_b = false;
    for (Request& request : requests) {
      request.of_a = pick(0, 1) == 0;
      const std::string_view user = users[static_cast<std::size_t>(pick(0, 2))];
      if (request.of_a) {
        request.keys = {user, user};
        request.costs = {pick(1, 3), pick(1, 2)};
      } else {
        request.keys = {user};
        request.costs = {pick(1, 3)};
      }
      (request.of_a ? has_a : has_b) = true;
    }
    batches_of_both += has_a && has_b;
    largest_batch = std::max(largest_batch, static_cast<int>(requests.size()));

    std::vector<swl::MultiLimiter<>::Prepared> prepared;
    prepared.reserve(requests.size());  // each stays in place while its call is in use
    std::vector<swl::ScriptCall> calls;
    for (const Request& request : requests) {
      prepared.push_back((request.of_a ? batched_a : batched_b).prepare(request.keys, request.costs));
      REQUIRE(prepared.back().call());
      calls.push_back(*prepared.back().call());
    }
    std::vector<swl::ScriptReply> replies = connection.runMany(calls);
    REQUIRE(replies.size() == requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const Request& request = requests[i];
      const swl::MultiDecision batched =
          (request.of_a ? batched_a : batched_b).settle(prepared[i], std::move(replies[i]));
      const swl::MultiDecision alone = (request.of_a ? twin_a : twin_b).tryAcquire(request.keys, request.costs);
      INFO("round " << round << ", request " << i);
      REQUIRE(sameMultiDecision(batched, alone));
      ++decisions;
      (batched ? admitted : refused) += 1;
    }
    clock.advance(std::chrono::milliseconds(pick(0, 400)));
  }
  WARN(decisions << " decisions: " << admitted << " admitted, " << refused << " refused; " << batches_of_both
                 << " batches held both limiters' calls; the largest held " << largest_batch);
  CHECK(admitted > 100);
  CHECK(refused > 100);
  CHECK(batches_of_both > 50);
}

TEST_CASE("a prepared multi-decision meets the access list before Redis and the failure policy after it") {
  RedisServer server;
  auto connection = server.connect();
  std::vector<swl::Verdict> verdicts;
  swl::LimiterOptions options;
  options.on_failure = swl::FailurePolicy::allow;
  auto access = std::make_shared<swl::AccessList>();
  access->deny("abuser");
  options.access = access;
  options.observer = [&](const swl::DecisionEvent& event) { verdicts.push_back(event.verdict); };
  swl::MultiLimiter<> limiter(connection, {{"a", swl::Limit{3, 1s}}, {"b", swl::Limit{5, 1s}}}, options);
  const std::vector<std::string_view> denied{"abuser", "k"}, keys{"k", "k"};

  swl::MultiLimiter<>::Prepared listed = limiter.prepare(denied, {1, 1});
  CHECK_FALSE(listed.call());  // nothing to send
  const swl::MultiDecision refused = limiter.settle(listed, {});
  CHECK_FALSE(refused);
  CHECK(refused.decision.tier == swl::Tier::deny_list);

  swl::MultiLimiter<>::Prepared lost = limiter.prepare(keys, {2, 1});
  REQUIRE(lost.call());
  const swl::MultiDecision failed_open =
      limiter.settle(lost, {swl::Reply(), std::make_exception_ptr(swl::ConnectionError("the connection is gone"))});
  CHECK(failed_open);
  CHECK(failed_open.decision.tier == swl::Tier::fail_open);
  CHECK(failed_open.rules[0].remaining == 1);  // 3 - 2, as tryAcquire answers a failure
  CHECK(logEntries(connection, "swl:a:k") == 0);

  CHECK_THROWS_WITH(limiter.prepare(keys, {4, 1}), Catch::Contains("rule 'a'"));  // bad input, at once
  CHECK(verdicts == std::vector<swl::Verdict>{swl::Verdict::rejected, swl::Verdict::allowed, swl::Verdict::error});

  swl::MultiLimiter<> throwing(connection, {{"a", swl::Limit{3, 1s}}});
  swl::MultiLimiter<>::Prepared thrown = throwing.prepare({"k"}, std::vector<std::int64_t>{1});
  CHECK_THROWS_AS(throwing.settle(thrown, {swl::Reply(), std::make_exception_ptr(swl::ConnectionError("gone"))}),
                  swl::ConnectionError);
}

namespace {

// The reply to a prepared decision's call, sent alone.
swl::ScriptReply runOne(swl::Connection& connection, const swl::MultiLimiter<>::Prepared& prepared) {
  swl::ScriptReply reply;
  reply.reply = connection.run(*prepared.call());
  return reply;
}

}  // namespace

TEST_CASE_METHOD(ManualTime,
                 "a charge is recorded in every rule whether or not it fits, and binds until it slides out") {
  const swl::Periods minutes = wholeMinutes();
  swl::MultiLimiter<> limiter(connection, {{"log", swl::Limit{10, 1s}}, {"quota", 10, minutes}}, options);
  const std::vector<std::string_view> keys{"u", "u"};
  REQUIRE(limiter.tryAcquire(keys, {6, 6}));
  swl::MultiLimiter<>::Prepared charge = limiter.prepare(keys, {6, 6}, {}, swl::Recording::always);
  const swl::MultiDecision charged = limiter.settle(charge, runOne(connection, charge));
  CHECK_FALSE(charged);  // it passed the limit: said, and recorded all the same
  CHECK(unitsInLog(*this, "log", swl::Limit{10, 1s}, "u") == 12);
  CHECK(textReply(connection, {"HGET", "swl:quota:u", "c"}) == "12");
  CHECK_FALSE(limiter.tryAcquire(keys, {1, 1}));  // bound: nothing more until the charges slide out
  clock.advance(1001ms);
  CHECK_FALSE(limiter.tryAcquire({"v", "u"}, {1, 1}));  // the minute's quota still holds 12 of 10
  swl::MultiLimiter<> log_alone(connection, {{"log", swl::Limit{10, 1s}}}, options);
  CHECK(log_alone.tryAcquire({"u"}, 10));  // the log's charges slid out whole
}

TEST_CASE_METHOD(ManualTime, "a dry run answers as tryAcquire would and records nothing, for the observer neither") {
  int observed = 0;
  options.observer = [&](const swl::DecisionEvent&) { ++observed; };
  const swl::Periods minutes = wholeMinutes();
  swl::MultiLimiter<> limiter(
      connection, {{"log", swl::Limit{5, 1s}}, swl::Rule::gcra("bucket", swl::Limit{4, 1s}), {"quota", 8, minutes}},
      options);
  const std::vector<std::string_view> keys{"u", "u", "u"};
  REQUIRE(limiter.tryAcquire(keys, {2, 2, 2}));
  CHECK(observed == 1);
  const std::string bucket_before = textReply(connection, {"GET", "swl:bucket:u"});

  swl::MultiLimiter<>::Prepared dry = limiter.prepare(keys, {1, 1, 1}, {}, swl::Recording::never);
  swl::MultiLimiter<>::Prepared dry_refused = limiter.prepare(keys, {1, 3, 1}, {}, swl::Recording::never);
  const swl::MultiDecision admitted = limiter.settle(dry, runOne(connection, dry));
  const swl::MultiDecision refused = limiter.settle(dry_refused, runOne(connection, dry_refused));
  CHECK(admitted);
  CHECK(admitted.rules[0].remaining == 3);  // as it stands: 5 - 2, the dry run's 1 not taken
  CHECK(admitted.rules[1].remaining == 2);
  CHECK(admitted.rules[2].remaining == 6);
  CHECK_FALSE(refused);
  CHECK(refused.binding_name == "bucket");
  CHECK(refused.rules[1].retry_after == 250ms);  // one unit back a quarter second from now
  CHECK(observed == 1);

  CHECK(unitsInLog(*this, "log", swl::Limit{5, 1s}, "u") == 2);
  CHECK(textReply(connection, {"GET", "swl:bucket:u"}) == bucket_before);
  CHECK(textReply(connection, {"HGET", "swl:quota:u", "c"}) == "2");
  // The next real decision finds what the first left.
  const swl::MultiDecision next = limiter.tryAcquire(keys, {1, 1, 1});
  CHECK(next.rules[0].remaining == 2);
  CHECK(next.rules[2].remaining == 5);
}
