// ShardedLimiter: one hot key's limit shared out over shards in different hash slots (its behaviour on a
// real cluster is in test_cluster_connection.cpp).

#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::RedisServer;

TEST_CASE("a sharded limiter shares its limit out over its shards and never admits more than the limit") {
  RedisServer server;
  auto connection = server.connect();
  swl::ShardedLimiter<> limiter(connection, swl::Limit{10, 60s}, {}, swl::Sharding(3));

  int admitted = 0;
  for (int i = 0; i < 200; ++i) {
    const swl::Decision decision = limiter.tryAcquire("hot");
    admitted += decision.allowed ? 1 : 0;
    CHECK(decision.limit == 10);
    CHECK(decision.remaining <= 10);
  }
  // 200 requests at random fill every shard: 4 + 3 + 3.
  CHECK(admitted == 10);
  CHECK(logEntries(connection, limiter.redisKey("hot", 0)) == 4);
  CHECK(logEntries(connection, limiter.redisKey("hot", 1)) == 3);
  CHECK(logEntries(connection, limiter.redisKey("hot", 2)) == 3);
  CHECK(limiter.shards() == 3);
}

TEST_CASE("a sharded limiter refuses a limit smaller than its shards, and a cost above one shard's share") {
  RedisServer server;
  auto connection = server.connect();
  CHECK_THROWS_WITH((swl::ShardedLimiter<>(connection, swl::Limit{3, 60s}, {}, swl::Sharding(4))),
                    Catch::Contains("cannot be shared out over 4 shards"));
  swl::ShardedLimiter<> limiter(connection, swl::Limit{10, 60s}, {}, swl::Sharding(4));
  CHECK_THROWS_WITH(limiter.tryAcquire("hot", 3), Catch::Contains("exceeds a shard's share of 2"));
  CHECK(limiter.tryAcquire("hot", 2).allowed);
}

TEST_CASE("a sharded limiter's batch decides each request on one shard, and peek and reset cover every shard") {
  RedisServer server;
  auto connection = server.connect();
  swl::ShardedLimiter<> limiter(connection, swl::Limit{6, 60s}, {}, swl::Sharding(3, "hot"));
  // Shards are picked at random: 60 requests leave a shard with fewer than its 2 about once in 10^9 runs
  // (20 did about once in 100).
  constexpr std::size_t kRequests = 60;
  std::vector<swl::AcquireRequest> requests(kRequests, swl::AcquireRequest{"k", 1});
  requests.push_back({"k", 3});  // above a shard's share of 2: refused alone
  const std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany(requests);
  int admitted = 0;
  for (std::size_t i = 0; i < kRequests; ++i) admitted += outcomes[i].value().allowed ? 1 : 0;
  CHECK(admitted == 6);
  CHECK_THROWS_AS(outcomes[kRequests].value(), swl::InvalidArgument);
  CHECK(limiter.peek("k").used == 6);
  CHECK(limiter.peek("k").remaining == 0);
  for (std::size_t shard = 0; shard < 3; ++shard) CHECK(logEntries(connection, limiter.redisKey("k", shard)) == 2);
  CHECK(limiter.reset("k"));
  CHECK(limiter.peek("k").used == 0);
  CHECK_FALSE(limiter.reset("k"));
}
