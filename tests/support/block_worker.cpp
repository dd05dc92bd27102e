// block_worker: another process asking a key that may be blocked (LimiterOptions::block_for), on Redis's
// clock. It prints its decision as "TIER ALLOWED RETRY_AFTER_US" for the test to read.
//
//   block_worker PORT KEY LIMIT WINDOW_MS BLOCK_MS
#include <swl/swl.hpp>

#include "redis_server.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) try {
  if (argc != 6) {
    std::fprintf(stderr, "usage: block_worker PORT KEY LIMIT WINDOW_MS BLOCK_MS\n");
    return 2;
  }
  swl::Connection connection = swl::Connection::tcp("127.0.0.1", std::stoi(argv[1]), swl::test::patient());
  swl::LimiterOptions options;
  options.block_for = std::chrono::milliseconds(std::stoll(argv[5]));
  swl::SlidingWindowLimiter<> limiter(
      connection, swl::Limit{std::stoll(argv[3]), std::chrono::milliseconds(std::stoll(argv[4]))}, options);
  const swl::Decision decision = limiter.tryAcquire(argv[2]);
  std::printf("%s %d %lld\n", std::string(swl::toString(decision.tier)).c_str(), decision.allowed ? 1 : 0,
              static_cast<long long>(decision.retry_after.count()));
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "block_worker: %s\n", error.what());
  return 1;
}
