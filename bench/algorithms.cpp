// The four algorithms side by side, on one private redis-server in one run: the table in docs/algorithms.md.
//
//   build/bench/algorithms [decisions=50000]
//
// - exactness: the edge-burst test (tests/support/edge_burst.hpp, limit 100 per second): the most any
//   window-long interval admitted, as a multiple of the limit;
// - memory: MEMORY USAGE (SAMPLES 0) of one key holding 10, 1,000 and 100,000 admitted requests;
// - Redis's CPU per decision: INFO commandstats usec_per_call of EVALSHA, over `decisions` decisions on
//   1,000 keys of limit 100 per second, about half of them refused;
// - decisions per second: the same decisions from one thread over one connection, and as a ratio to
//   the sliding window log's in the same run.

#include <swl/swl.hpp>

#include "support/edge_burst.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

struct Row {
  const char* name;
  double worst_window;  // x limit
  long long bytes[3];   // at 10, 1,000, 100,000 requests per window
  double usec_per_call;
  double per_second;
};

swl::LimiterOptions manual(swl::testing::ManualClock& clock) {
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  return options;
}

template <class Limiter>
long long bytesHolding(swl::Connection& connection, const char* name, std::int64_t requests) {
  swl::testing::ManualClock clock;
  const std::string prefix = "mem-" + std::string(name) + "-" + std::to_string(requests);
  Limiter limiter(connection, swl::Limit{requests, 1h}, manual(clock), swl::PrefixKey(prefix));
  std::vector<swl::AcquireRequest> batch(1000, swl::AcquireRequest{"k", 1});
  for (std::int64_t filled = 0; filled < requests; filled += static_cast<std::int64_t>(batch.size())) {
    batch.resize(static_cast<std::size_t>(std::min<std::int64_t>(1000, requests - filled)));
    for (const swl::Outcome& outcome : limiter.tryAcquireMany(batch)) {
      if (!outcome.value().allowed) throw std::runtime_error(std::string(name) + ": refused while filling");
    }
    clock.advance(1ms);
  }
  return swl::test::integerReply(connection, {"MEMORY", "USAGE", limiter.redisKey("k"), "SAMPLES", "0"});
}

template <class Limiter>
Row measure(swl::Connection& connection, const char* name, long decisions) {
  Row row{name, 0, {}, 0, 0};
  {
    swl::testing::ManualClock clock;
    Limiter limiter(connection, swl::Limit{100, 1s}, manual(clock), swl::PrefixKey(std::string("burst-") + name));
    row.worst_window = static_cast<double>(swl::test::worstWindowInEdgeBurst(limiter, clock, "k")) / 100;
  }
  const std::int64_t sizes[3] = {10, 1000, 100000};
  for (int i = 0; i < 3; ++i) row.bytes[i] = bytesHolding<Limiter>(connection, name, sizes[i]);

  // On Redis's clock: 1,000 keys, limit 100 per second, each asked 200 times as fast as the loop can.
  Limiter limiter(connection, swl::Limit{100, 1s}, {}, swl::PrefixKey(std::string("speed-") + name));
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back("user:" + std::to_string(i));
  limiter.tryAcquire(keys[0]);  // loads the script outside the measurement
  swl::test::textReply(connection, {"CONFIG", "RESETSTAT"});
  const auto started = std::chrono::steady_clock::now();
  for (long i = 0; i < decisions; ++i) limiter.tryAcquire(keys[static_cast<std::size_t>(i / 200 % 1000)]);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  row.usec_per_call = swl::test::evalshaUsecPerCall(connection);
  row.per_second = static_cast<double>(decisions) / took.count();
  return row;
}

}  // namespace

int main(int argc, char** argv) try {
  const long decisions = argc > 1 ? std::atol(argv[1]) : 50000;
  swl::test::RedisServer server;
  auto connection = server.connect();
  std::fprintf(stderr, "measuring on a private redis-server at 127.0.0.1:%d\n", server.port());

  const std::vector<Row> rows{
      measure<swl::SlidingWindowLimiter<>>(connection, "sliding window log", decisions),
      measure<swl::SlidingCounterLimiter<>>(connection, "sliding counter", decisions),
      measure<swl::FixedWindowLimiter<>>(connection, "fixed window", decisions),
      measure<swl::GcraLimiter<>>(connection, "GCRA", decisions),
      measure<swl::BucketedWindowLimiter<>>(connection, "bucketed window (B = 64)", decisions),
  };
  std::printf(
      "| algorithm | most admitted in one window (x limit) | bytes/key at 10 | at 1,000 | at 100,000 "
      "| Redis usec/decision | decisions/s (1 thread) | vs log |\n");
  std::printf("|---|--:|--:|--:|--:|--:|--:|--:|\n");
  for (const Row& row : rows) {
    std::printf("| %s | %.2f | %lld | %lld | %lld | %.2f | %.0f | %.2f |\n", row.name, row.worst_window, row.bytes[0],
                row.bytes[1], row.bytes[2], row.usec_per_call, row.per_second, row.per_second / rows[0].per_second);
  }
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "algorithms: %s\n", error.what());
  return 1;
}
