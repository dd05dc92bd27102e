// Blocking (LimiterOptions::block_for): a refusal blocks its key in Redis, so every limiter and process
// refuses it until the block ends (Tier::blocked), counting nothing meanwhile, with a retry_after that
// waits out the block and then the window; checked for every algorithm and the calendar quota with a
// manual clock, against another process on Redis's clock, through the refusal cache, leases and a
// cluster, and on random traces against an exact model.

#include <swl/calendar.hpp>
#include <swl/swl.hpp>

#include "support/child_process.hpp"
#include "support/manual_time.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_server.hpp"
#include "support/workers.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace std::chrono_literals;
using swl::test::ManualTime;
using swl::test::RedisServer;

namespace {

swl::LimiterOptions blocking(swl::LimiterOptions options, std::chrono::microseconds block_for) {
  options.block_for = block_for;
  return options;
}

// The exact model of a blocking sliding window log of one-unit requests: the admission times in the
// window, and when the block ends.
class BlockingLogModel {
 public:
  BlockingLogModel(swl::Limit limit, std::chrono::microseconds block_for) : limit_(limit), block_for_(block_for) {}

  swl::Decision decide(std::chrono::microseconds now) {
    while (!admitted_.empty() && admitted_.front() <= now - limit_.window) admitted_.pop_front();
    swl::Decision decision;
    decision.limit = limit_.max_requests;
    const auto held = static_cast<std::int64_t>(admitted_.size());
    // The window admits once the oldest entry in the way has left.
    const std::chrono::microseconds window_wait =
        held < limit_.max_requests
            ? 0us
            : admitted_[static_cast<std::size_t>(held - limit_.max_requests)] + limit_.window - now;
    if (now < blocked_until_) {
      decision.tier = swl::Tier::blocked;
      decision.retry_after = std::max(window_wait, blocked_until_ - now);
      return decision;
    }
    if (window_wait > 0us) {
      blocked_until_ = now + block_for_;
      decision.retry_after = std::max(window_wait, block_for_);
      decision.remaining = 0;
      return decision;
    }
    admitted_.push_back(now);
    decision.allowed = true;
    decision.remaining = limit_.max_requests - held - 1;
    return decision;
  }

 private:
  swl::Limit limit_;
  std::chrono::microseconds block_for_;
  std::deque<std::chrono::microseconds> admitted_;
  std::chrono::microseconds blocked_until_{0};
};

}  // namespace

TEMPLATE_TEST_CASE("a refusal blocks the key for block_for, refusing every cost meanwhile and counting none", "",
                   swl::SlidingWindowLimiter<>, swl::SlidingCounterLimiter<>, swl::FixedWindowLimiter<>,
                   swl::GcraLimiter<>, swl::BucketedWindowLimiter<>) {
  ManualTime time;
  TestType limiter(time.connection, swl::Limit{3, 1s}, blocking(time.options, 10s));
  for (int i = 0; i < 3; ++i) REQUIRE(limiter.tryAcquire("abuser").allowed);
  const swl::Decision first = limiter.tryAcquire("abuser");
  CHECK_FALSE(first.allowed);
  CHECK(first.tier == swl::Tier::redis);  // the refusal that starts the block is the limit's own
  CHECK(first.retry_after == 10s);

  // A second later the window has room again, but the key stays blocked, for every cost.
  time.clock.advance(1s);
  const std::int64_t used = limiter.peek("abuser").used;
  for (const std::int64_t cost : {1, 3}) {
    const swl::Decision blocked = limiter.tryAcquire("abuser", cost);
    CHECK_FALSE(blocked.allowed);
    CHECK(blocked.tier == swl::Tier::blocked);
    CHECK(blocked.retry_after == 9s);
    CHECK(blocked.remaining == 0);
  }
  CHECK(limiter.peek("abuser").used == used);  // a peek reports the window: the refusals counted nothing
  CHECK(limiter.tryAcquire("neighbour").allowed);

  // Waiting retry_after is enough: the block ends, and the whole limit is there.
  time.clock.advance(9s - 1us);
  CHECK(limiter.tryAcquire("abuser").tier == swl::Tier::blocked);
  time.clock.advance(1us);
  CHECK(limiter.tryAcquire("abuser", 3).allowed);
}

TEST_CASE("a block shorter than the window waits out the window too, so waiting retry_after is always enough") {
  ManualTime time;
  // Weighted entries, counted refusals: the wait is the window's when it is the longer one.
  swl::LimiterOptions options = blocking(time.options, 2s);
  options.rejected = swl::RejectedRequests::counted;
  swl::SlidingWindowLimiter<> limiter(time.connection, swl::Limit{10, 10s}, options);
  REQUIRE(limiter.tryAcquire("k", 6).allowed);
  time.clock.advance(1s);
  const swl::Decision refused = limiter.tryAcquire("k", 6);  // counted: the window now holds 12
  CHECK_FALSE(refused.allowed);
  CHECK(refused.retry_after == 10s);  // both entries must leave: the second at 1 s + 10 s
  time.clock.advance(1s);
  const swl::Decision blocked = limiter.tryAcquire("k", 6);
  CHECK(blocked.tier == swl::Tier::blocked);
  CHECK(blocked.retry_after == 9s);
  CHECK(limiter.peek("k").used == 12);  // the blocked refusal was not counted, though refusals count
  time.clock.advance(9s);
  CHECK(limiter.tryAcquire("k", 6).allowed);
}

TEST_CASE("a blocking log decides as an exact model does on random traces") {
  std::mt19937_64 random(GENERATE(1, 2, 3));
  ManualTime time;
  const swl::Limit limit{5, 1s};
  const std::chrono::microseconds block_for = GENERATE(100ms, 1s, 3s);
  swl::SlidingWindowLimiter<> limiter(time.connection, limit, blocking(time.options, block_for));
  BlockingLogModel model(limit, block_for);
  std::chrono::microseconds now = time.clock.now();
  for (int call = 0; call < 600; ++call) {
    // Never twice at one microsecond: the log would record the second entry 1 us later.
    now += std::chrono::microseconds(std::uniform_int_distribution<std::int64_t>(1, 150'000)(random));
    time.clock.set(now);
    INFO("call " << call << " at " << now.count() << " us, block " << block_for.count() << " us");
    const swl::Decision expected = model.decide(now);
    const swl::Decision decision = limiter.tryAcquire("k");
    REQUIRE(decision.allowed == expected.allowed);
    REQUIRE(decision.tier == expected.tier);
    REQUIRE(decision.retry_after == expected.retry_after);
    if (decision.allowed) REQUIRE(decision.remaining == expected.remaining);
  }
}

TEST_CASE("a block set by one process refuses the key in another, on Redis's clock") {
  RedisServer server;
  swl::Connection connection = server.connect();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{1, 60s}, blocking({}, 120s));
  REQUIRE(limiter.tryAcquire("abuser").allowed);
  REQUIRE_FALSE(limiter.tryAcquire("abuser").allowed);  // blocks it for two minutes

  const auto ask = [&](const std::string& key) {
    swl::test::ChildProcess worker;
    const std::string output = swl::test::scratchFile("block-worker");
    worker.start(
        {swl::test::workerProgram("SWL_BLOCK_WORKER"), std::to_string(server.port()), key, "5", "60000", "120000"},
        output);
    REQUIRE(worker.waitForExit(30s) == 0);
    std::ifstream file(output);
    std::string tier;
    int allowed = -1;
    long long retry_after_us = -1;
    file >> tier >> allowed >> retry_after_us;
    std::remove(output.c_str());
    return std::make_tuple(tier, allowed, std::chrono::microseconds(retry_after_us));
  };
  // The other process's limit (5 a minute) would admit: the block refuses, with what is left of it.
  const auto [tier, allowed, retry_after] = ask("abuser");
  CHECK(tier == "blocked");
  CHECK(allowed == 0);
  CHECK(retry_after > 100s);
  CHECK(retry_after <= 120s);
  const auto [other_tier, other_allowed, other_retry] = ask("someone-else");
  CHECK(other_tier == "redis");
  CHECK(other_allowed == 1);
}

TEST_CASE("the refusal cache and leases honour a block") {
  ManualTime time;
  const swl::Limit limit{2, 1s};
  const swl::LimiterOptions options = blocking(time.options, 5s);
  swl::SlidingWindowLimiter<> log(time.connection, limit, options);
  swl::TieredLimiter<> tiered(time.connection, limit, options);
  swl::LeasingLimiter<> leasing(time.connection, limit, options);
  REQUIRE(log.tryAcquire("k", 2).allowed);
  REQUIRE_FALSE(log.tryAcquire("k").allowed);  // blocks "k" for 5 s
  time.clock.advance(2s);                      // the window is empty again

  const swl::Decision from_redis = tiered.tryAcquire("k");
  CHECK(from_redis.tier == swl::Tier::blocked);
  CHECK(from_redis.retry_after == 3s);
  const swl::Decision cached = tiered.tryAcquire("k");  // repeated without a round trip
  CHECK(cached.tier == swl::Tier::blocked_cache);
  CHECK(cached.retry_after <= 3s);  // the cache counts down on this host's steady clock
  CHECK(cached.retry_after > 2s);

  const swl::Decision lease = leasing.tryAcquire("k");
  CHECK_FALSE(lease.allowed);
  CHECK(lease.tier == swl::Tier::blocked);
  CHECK(lease.retry_after == 3s);
  CHECK(log.peek("k").used == 0);  // nothing was leased

  time.clock.advance(3s);
  CHECK(log.tryAcquire("k").allowed);
}

TEST_CASE("a calendar quota blocks too, in batches as in single calls") {
  ManualTime time;
  time.clock.set(std::chrono::seconds(1'750'000'000));
  swl::CalendarLimiter<> daily(time.connection, 2, swl::CalendarPeriods::days(1, "UTC"), blocking(time.options, 48h));
  REQUIRE(daily.tryAcquire("k", 2).allowed);
  const swl::Decision refused = daily.tryAcquire("k");
  CHECK(refused.retry_after == 48h);  // longer than the rest of the day
  time.clock.advance(30h);            // the next day, still blocked
  const std::vector<swl::Outcome> batch = daily.tryAcquireMany({{"k", 1}, {"other", 1}});
  CHECK(batch[0].decision.tier == swl::Tier::blocked);
  CHECK(batch[0].decision.retry_after == 18h);
  CHECK(batch[1].decision.allowed);
  time.clock.advance(18h);
  CHECK(daily.tryAcquire("k").allowed);
}

TEST_CASE("the block key shares the key's hash slot, and a blocking limiter works on a cluster") {
  for (const std::string key : {"swl:user:42", "swl:{user:42}", "{a}b", "a{b", "a}b{c}"}) {
    INFO(key);
    CHECK(swl::hashSlot(swl::detail::blockKeyOf(key)) == swl::hashSlot(key));
  }
  // A '}' outside a hash tag leaves no name in the key's slot: beside it, right on a single server.
  CHECK(swl::detail::blockKeyOf("a}b") == "a}b:blocked");
  swl::test::RedisCluster cluster;
  swl::ClusterOptions options;
  options.connection = swl::test::patient();
  swl::ClusterConnection connection = swl::ClusterConnection::tcp(cluster.seeds(), options);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{1, 60s}, blocking({}, 60s));
  for (const std::string key : {"user:1", "user:2", "user:3", "{tenant}:4"}) {
    INFO(key);
    CHECK(limiter.tryAcquire(key).allowed);
    CHECK(limiter.tryAcquire(key).tier == swl::Tier::redis);
    CHECK(limiter.tryAcquire(key).tier == swl::Tier::blocked);
  }
}

TEST_CASE("block_for outside 1 ms..2^53 us, or on a limiter that cannot block, is an InvalidArgument naming it") {
  using Catch::Matchers::Contains;
  RedisServer server;
  swl::Connection connection = server.connect();
  const swl::Limit limit{5, 1s};
  CHECK_THROWS_WITH(swl::SlidingWindowLimiter<>(connection, limit, blocking({}, 999us)),
                    Contains("block_for of 999 us is not in 1 ms"));
  CHECK_THROWS_AS(swl::GcraLimiter<>(connection, limit, blocking({}, -1s)), swl::InvalidArgument);
  CHECK_THROWS_WITH(swl::MultiLimiter<>(connection, {{"a", limit}}, blocking({}, 1s)),
                    Contains("block_for is not taken here"));
  CHECK_THROWS_WITH(swl::ConcurrencyLimiter<>(connection, swl::Concurrency{2, 10s}, blocking({}, 1s)),
                    Contains("block_for is not taken here"));
  CHECK_THROWS_WITH(swl::ShardedLimiter<>(connection, swl::Limit{100, 1s}, blocking({}, 1s), swl::Sharding(4)),
                    Contains("would block one shard, not the key"));
  CHECK_NOTHROW(swl::SlidingWindowLimiter<>(connection, limit, blocking({}, 1ms)));
}
