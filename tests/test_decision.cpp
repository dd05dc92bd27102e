#include <swl/decision.hpp>
#include <swl/error.hpp>
#include <swl/redis_limiter.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <type_traits>

using namespace std::chrono_literals;

TEST_CASE("a Limit keeps its window exact to the microsecond") {
  swl::Limit limit{100, 1500ms};
  CHECK(limit.max_requests == 100);
  CHECK(limit.window == std::chrono::microseconds(1'500'000));
  swl::Limit fine{1, 7us};
  CHECK(fine.window.count() == 7);
  // A nanosecond window would lose precision, so it does not convert.
  STATIC_REQUIRE_FALSE(std::is_convertible_v<std::chrono::nanoseconds, decltype(limit.window)>);
}

TEST_CASE("a Decision converts to bool only explicitly") {
  swl::Decision admitted{true, 10, 9, 0us, 1s, swl::Tier::redis};
  swl::Decision rejected{false, 10, 0, 250ms, 1s, swl::Tier::redis};
  CHECK(static_cast<bool>(admitted));
  CHECK_FALSE(static_cast<bool>(rejected));
  STATIC_REQUIRE_FALSE(std::is_convertible_v<swl::Decision, bool>);
}

TEST_CASE("every swl error is a swl::Error and a std::runtime_error") {
  STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, swl::Error>);
  STATIC_REQUIRE(std::is_base_of_v<swl::Error, swl::InvalidArgument>);
  STATIC_REQUIRE(std::is_base_of_v<swl::ConnectionError, swl::TimeoutError>);
  STATIC_REQUIRE(std::is_base_of_v<swl::ConnectionError, swl::AuthError>);
  STATIC_REQUIRE(std::is_base_of_v<swl::ReplyError, swl::ProtocolError>);
  CHECK_THROWS_WITH(throw swl::TimeoutError("redis at x did not answer"), "redis at x did not answer");
}

namespace {

// Builds the reply a script would send: an array of integers.
struct FakeReply {
  explicit FakeReply(std::initializer_list<long long> values) {
    for (long long value : values) {
      redisReply element{};
      element.type = REDIS_REPLY_INTEGER;
      element.integer = value;
      elements.push_back(element);
    }
    for (redisReply& element : elements) pointers.push_back(&element);
    array.type = REDIS_REPLY_ARRAY;
    array.elements = pointers.size();
    array.element = pointers.data();
  }
  swl::ReplyView view() const { return swl::ReplyView(&array); }

  std::vector<redisReply> elements;
  std::vector<redisReply*> pointers;
  redisReply array{};
};

}  // namespace

TEST_CASE("a well-formed script reply becomes the Decision it describes") {
  FakeReply rejected{0, 0, 1234, 5678};
  swl::Decision decision = swl::detail::decodeDecision(rejected.view(), 10);
  CHECK_FALSE(decision.allowed);
  CHECK(decision.limit == 10);
  CHECK(decision.remaining == 0);
  CHECK(decision.retry_after == 1234us);
  CHECK(decision.reset_after == 5678us);
  CHECK(decision.tier == swl::Tier::redis);
}

TEST_CASE("a script reply no correct script could send is a ProtocolError") {
  CHECK_THROWS_AS(swl::detail::decodeDecision(FakeReply{1, 2, 0}.view(), 10), swl::ProtocolError);
  CHECK_THROWS_AS(swl::detail::decodeDecision(FakeReply{2, 2, 0, 0}.view(), 10), swl::ProtocolError);
  CHECK_THROWS_AS(swl::detail::decodeDecision(FakeReply{1, 11, 0, 0}.view(), 10), swl::ProtocolError);
  CHECK_THROWS_AS(swl::detail::decodeDecision(FakeReply{1, 5, 7, 0}.view(), 10), swl::ProtocolError);
  CHECK_THROWS_AS(swl::detail::decodeDecision(FakeReply{0, 0, 0, 0}.view(), 10), swl::ProtocolError);
  CHECK_THROWS_AS(swl::detail::decodeDecision(FakeReply{1, 5, 0, -1}.view(), 10), swl::ProtocolError);
  CHECK_THROWS_AS(swl::detail::decodeDecision(FakeReply{0, -(1LL << 53) - 1, 5, 5}.view(), 10), swl::ProtocolError);
  redisReply text{};
  text.type = REDIS_REPLY_STRING;
  CHECK_THROWS_WITH(swl::detail::decodeDecision(swl::ReplyView(&text), 10), Catch::Contains("array of 4 integers"));
}

TEST_CASE("a window counted past its limit: the decision's room is 0, the usage says what the window holds") {
  const FakeReply overfull{0, -3, 1234, 5678};  // limit 10, the window holds 13 (counted refusals)
  const swl::Decision decision = swl::detail::decodeDecision(overfull.view(), 10);
  CHECK(decision.remaining == 0);
  const swl::Usage usage = swl::detail::decodeUsage(overfull.view(), 10);
  CHECK(usage.used == 13);
  CHECK(usage.remaining == 0);
  CHECK(usage.reset_after == 5678us);
}
