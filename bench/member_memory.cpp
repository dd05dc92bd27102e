// Redis memory per window entry for each member policy, at 100 and 10,000 entries per key.
//
//   build/bench/member_memory          (starts its own private redis-server)
//
// Fills one key per (policy, size) through a real limiter, one request per simulated millisecond (so the
// timestamp policy does not collide and all three hold the same number of entries), then asks Redis for
// MEMORY USAGE (SAMPLES 0: every element counted) and the encoding it chose.

#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <chrono>
#include <cstdio>
#include <string>

namespace {

template <class MemberPolicy>
void measure(swl::Connection& connection, const char* policy_name, int entries) {
  swl::testing::ManualClock clock;
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  const std::string prefix = std::string("mem-") + policy_name + "-" + std::to_string(entries);
  swl::SlidingWindowLimiter<swl::PrefixKey, MemberPolicy> limiter(
      connection, swl::Limit{entries, std::chrono::hours(1)}, options, swl::PrefixKey(prefix));
  for (int i = 0; i < entries; ++i) {
    if (!limiter.tryAcquire("k")) throw std::runtime_error(prefix + ": unexpected rejection while filling");
    clock.advance(std::chrono::milliseconds(1));
  }
  const std::string key = limiter.redisKey("k");
  const long long bytes = swl::test::integerReply(connection, {"MEMORY", "USAGE", key, "SAMPLES", "0"});
  const std::string encoding = swl::test::textReply(connection, {"OBJECT", "ENCODING", key});
  std::string member_example = MemberPolicy().next();
  if (member_example.empty()) member_example = std::to_string(clock.now().count() / 1000);
  std::printf("| %-9s | %7d | %9lld | %11.1f | %-8s | %12zu |\n", policy_name, entries, bytes,
              static_cast<double>(bytes) / entries, encoding.c_str(), member_example.size());
}

}  // namespace

int main() try {
  swl::test::RedisServer server;
  auto connection = server.connect();
  std::printf("| member    | entries | bytes/key | bytes/entry | encoding | member bytes |\n");
  std::printf("|-----------|--------:|----------:|------------:|----------|-------------:|\n");
  for (int entries : {100, 10000}) {
    measure<swl::CompactMember>(connection, "compact", entries);
    measure<swl::UuidMember>(connection, "uuid", entries);
    measure<swl::TimestampMember>(connection, "timestamp", entries);
  }
} catch (const std::exception& error) {
  std::fprintf(stderr, "member_memory: %s\n", error.what());
  return 1;
}
