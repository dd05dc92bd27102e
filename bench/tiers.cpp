// What the local tiers save: one abuser flooding one key while 1,000 users stay within their limits,
// decided by a SlidingWindowLimiter, by a TieredLimiter (refusal cache) and by a LocalLimiter, on one
// private redis-server in one run.
//
//   build/bench/tiers [decisions=100000] [abuser share in percent=90]
//
// For each: the EVALSHA calls Redis ran (INFO commandstats), decisions per second from one thread over
// one connection, and both as ratios to the plain Redis limiter's in the same run. Admitted counts
// differ with each run's length: the abuser gets its 100 per second however fast the calls come.

#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace {

using namespace std::chrono_literals;

struct Run {
  long long redis_calls = 0;
  long long admitted = 0;
  double per_second = 0;
};

template <class Decide>
Run run(swl::Connection& admin, long decisions, int abuser_percent, Decide&& decide) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> percent(0, 99), user(0, 999);
  std::vector<std::string> users;
  for (int i = 0; i < 1000; ++i) users.push_back("user:" + std::to_string(i));
  const long long calls_before = swl::test::commandCalls(admin, "evalsha");
  Run result;
  const auto started = std::chrono::steady_clock::now();
  for (long i = 0; i < decisions; ++i) {
    const std::string& key = percent(random) < abuser_percent ? std::string("abuser") : users[user(random)];
    if (decide(key).allowed) ++result.admitted;
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  result.per_second = static_cast<double>(decisions) / took.count();
  result.redis_calls = swl::test::commandCalls(admin, "evalsha") - calls_before;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  const long decisions = argc > 1 ? std::atol(argv[1]) : 100'000;
  const int abuser_percent = argc > 2 ? std::atoi(argv[2]) : 90;
  if (decisions <= 0 || abuser_percent < 0 || abuser_percent > 100) {
    std::fprintf(stderr, "usage: %s [decisions > 0] [abuser share 0..100]\n", argv[0]);
    return 2;
  }
  swl::test::RedisServer server;
  auto admin = server.connect();
  auto connection = server.connect();
  // 100 per second per key: users (~10% of calls over 1,000 keys) never reach it, the abuser always does.
  const swl::Limit limit{100, 1s};

  swl::SlidingWindowLimiter<> plain(connection, limit, {}, swl::PrefixKey("plain"));
  const Run redis =
      run(admin, decisions, abuser_percent, [&](const std::string& key) { return plain.tryAcquire(key); });

  swl::TieredLimiter<> tiered(connection, limit, {}, {}, swl::PrefixKey("tiered"));
  const Run cached =
      run(admin, decisions, abuser_percent, [&](const std::string& key) { return tiered.tryAcquire(key); });

  swl::LocalLimiter local(limit);
  const Run memory =
      run(admin, decisions, abuser_percent, [&](const std::string& key) { return local.tryAcquire(key); });

  std::printf("%ld decisions, %d%% from one abuser, limit 100/s per key, one thread, one connection\n\n", decisions,
              abuser_percent);
  std::printf("| limiter | admitted | Redis calls | Redis calls vs plain | decisions/s | vs plain |\n");
  std::printf("|---|--:|--:|--:|--:|--:|\n");
  const auto row = [&](const char* name, const Run& measured) {
    std::printf("| %s | %lld | %lld | %.3f | %.0f | %.2f |\n", name, measured.admitted, measured.redis_calls,
                static_cast<double>(measured.redis_calls) / static_cast<double>(redis.redis_calls), measured.per_second,
                measured.per_second / redis.per_second);
  };
  row("SlidingWindowLimiter (Redis)", redis);
  row("TieredLimiter (refusal cache + Redis)", cached);
  row("LocalLimiter (memory only)", memory);
  return 0;
}
