// What a decision asks of one limited descriptor, and its decision read back (ratelimit/decide/asked.hpp):
// no Redis. A check asks 1 hit under one more than the limit, a charge its hits under a limit that holds
// them; read back under the descriptor's own limit.

#include <ratelimit/decide/asked.hpp>

#include <catch2/catch.hpp>

#include <chrono>

namespace ratelimit_asked_tests {

using namespace std::chrono_literals;
using swl::Decision;
using swl::ratelimit::Asked;
using swl::ratelimit::LimitedDescriptor;

LimitedDescriptor descriptor(const char* counting, std::int64_t limit, std::int64_t hits) {
  LimitedDescriptor each;
  each.counting = counting;
  each.limit = swl::Limit{limit, 1h};
  each.hits = hits;
  return each;
}

Decision redisSaid(bool allowed, std::int64_t limit, std::int64_t remaining) {
  Decision decision;
  decision.allowed = allowed;
  decision.limit = limit;
  decision.remaining = remaining;
  return decision;
}

TEST_CASE("a check asks one hit under one more than the limit, so it is refused only past the limit") {
  const auto log = descriptor("log", 1000, 0);
  const auto asked = swl::ratelimit::askedOf(log, Asked::check);
  CHECK(asked.cost == 1);
  CHECK(asked.limit.max_requests == 1001);
  // 1,000 held: the dry run fits under 1,001 with 1 left as it stands; under 1,000, OK with none left
  const Decision full = swl::ratelimit::checkedUnder(log, redisSaid(true, 1001, 1));
  CHECK(full.allowed);
  CHECK(full.limit == 1000);
  CHECK(full.remaining == 0);
  CHECK(swl::ratelimit::checkedUnder(log, redisSaid(true, 1001, 401)).remaining == 400);
  CHECK_FALSE(swl::ratelimit::checkedUnder(log, redisSaid(false, 1001, 0)).allowed);  // 1,200 held
  // GCRA holds nothing past its limit: asked as it is, and what no hit gets is OK
  const auto gcra = descriptor("gcra", 10, 0);
  CHECK(swl::ratelimit::askedOf(gcra, Asked::check).limit.max_requests == 10);
  CHECK(swl::ratelimit::checkedUnder(gcra, redisSaid(false, 10, 0)).allowed);
}

TEST_CASE("a charge is recorded under a limit that holds it, and read back as fitting or past the limit") {
  const auto big = descriptor("log", 1000, 2500);
  const auto asked = swl::ratelimit::askedOf(big, Asked::charge);
  CHECK(asked.cost == 2500);
  CHECK(asked.limit.max_requests == 2500);
  CHECK_FALSE(swl::ratelimit::chargedUnder(big, redisSaid(true, 2500, 0)).allowed);  // 2,500 held of 1,000
  const auto small = descriptor("log", 1000, 600);
  CHECK(swl::ratelimit::askedOf(small, Asked::charge).limit.max_requests == 1000);
  const Decision within = swl::ratelimit::chargedUnder(small, redisSaid(true, 1000, 400));
  CHECK(within.allowed);
  CHECK(within.remaining == 400);
  const Decision past = swl::ratelimit::chargedUnder(small, redisSaid(false, 1000, 0));  // 1,200 held
  CHECK_FALSE(past.allowed);
  CHECK(past.remaining == 0);
  // GCRA: at most its limit in one call, and a charge above it did not fit
  const auto gcra = descriptor("gcra", 10, 25);
  CHECK(swl::ratelimit::askedOf(gcra, Asked::charge).cost == 10);
  CHECK_FALSE(swl::ratelimit::chargedUnder(gcra, redisSaid(true, 10, 0)).allowed);
  // the failure policy's answer stands
  Decision failed = redisSaid(true, 1000, 0);
  failed.tier = swl::Tier::fail_open;
  CHECK(swl::ratelimit::chargedUnder(small, failed).allowed);
  // hits asked as they are
  CHECK(swl::ratelimit::askedOf(small, Asked::hits).cost == 600);
  CHECK(swl::ratelimit::askedOf(small, Asked::hits).limit.max_requests == 1000);
}

}  // namespace ratelimit_asked_tests
