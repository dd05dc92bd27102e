// hot_key: what a ShardedLimiter turns away early under steady demand at exactly its limit, against one
// private redis-server on a manual clock (the shards' keys need no cluster to show it). Requests come
// evenly at limit/window for `windows` windows; a sound limiter would refuse none of them, and one
// sharded over S keys refuses some because a request can meet a full shard while another has room.
//
//   build/bench/hot_key [windows=20]
#include <swl/swl.hpp>

#include "support/redis_server.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  const int windows = argc > 1 ? std::atoi(argv[1]) : 20;
  swl::test::RedisServer server;
  auto connection = server.connect();
  std::printf("| limit | shards | requests (evenly, at the limit's rate) | refused early |\n|---|--:|--:|--:|\n");
  struct Case {
    swl::Limit limit;
    std::size_t shards;
  };
  int run = 0;
  for (const Case& sharded : {Case{{1000, std::chrono::seconds(1)}, 4}, Case{{200, std::chrono::seconds(2)}, 4},
                              Case{{10000, std::chrono::seconds(1)}, 4}, Case{{1000, std::chrono::seconds(1)}, 8}}) {
    swl::testing::ManualClock clock;
    swl::LimiterOptions options;
    options.clock = swl::Clock::manual(clock);
    // Each case on keys of its own: every manual clock starts at the same moment.
    swl::ShardedLimiter<> limiter(connection, sharded.limit, options,
                                  swl::Sharding(sharded.shards, "hot" + std::to_string(++run)));
    const auto gap = sharded.limit.window / sharded.limit.max_requests;
    const long requests = sharded.limit.max_requests * windows;
    long refused = 0;
    for (long i = 0; i < requests; ++i) {
      refused += limiter.tryAcquire("key").allowed ? 0 : 1;
      clock.advance(gap);
    }
    std::printf("| %lld per %lld s | %zu | %ld | %.1f%% |\n", static_cast<long long>(sharded.limit.max_requests),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(sharded.limit.window).count()),
                sharded.shards, requests, 100.0 * static_cast<double>(refused) / static_cast<double>(requests));
  }
  return 0;
}
