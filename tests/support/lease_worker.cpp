// lease_worker: one process of a multi-process LeasingLimiter test. Its threads hammer one key of a
// private redis-server from a moment given on CLOCK_MONOTONIC, and it writes the span of every admission
// (admission_spans.hpp) to a file for the test to check against the limit.
//
//   lease_worker PORT KEY LIMIT WINDOW_MS LEASE_MS THREADS START_NS RUN_MS OUT_FILE
//   lease_worker PORT KEY LIMIT WINDOW_MS LEASE_MS hold
//       the second form asks until it holds a lease, prints "held" and waits to be killed: a crash.
#include <swl/swl.hpp>

#include "admission_spans.hpp"
#include "redis_server.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>

namespace {

struct Arguments {
  int port;
  std::string key;
  swl::Limit limit;
  swl::LeaseOptions leases;
};

int hold(const Arguments& arguments) {
  swl::Connection connection = swl::Connection::tcp("127.0.0.1", arguments.port, swl::test::patient());
  swl::LeasingLimiter<> limiter(connection, arguments.limit, {}, arguments.leases);
  for (;;) {
    if (limiter.tryAcquire(arguments.key).tier == swl::Tier::lease) break;
  }
  std::printf("held\n");
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

int hammer(const Arguments& arguments, int threads, std::int64_t start_ns, std::int64_t run_ms,
           const std::string& out) {
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", arguments.port, swl::PoolOptions{static_cast<std::size_t>(threads)},
                                       swl::test::patient());
  swl::LeasingLimiter<> limiter(pool, arguments.limit, {}, arguments.leases);
  const swl::test::Hammering run = swl::test::hammer(threads, start_ns, start_ns + run_ms * 1'000'000, true,
                                                     [&](int) { return limiter.tryAcquire(arguments.key).allowed; });
  swl::test::writeSpans(out, run.spans);
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 7 && argc != 10) {
    std::fprintf(stderr,
                 "usage: lease_worker PORT KEY LIMIT WINDOW_MS LEASE_MS (hold | THREADS START_NS RUN_MS OUT)\n");
    return 2;
  }
  Arguments arguments{
      std::stoi(argv[1]), argv[2], swl::Limit{std::stoll(argv[3]), std::chrono::milliseconds(std::stoll(argv[4]))}, {}};
  arguments.leases.duration = std::chrono::milliseconds(std::stoll(argv[5]));
  if (argc == 7) return hold(arguments);
  return hammer(arguments, std::stoi(argv[6]), std::stoll(argv[7]), std::stoll(argv[8]), argv[9]);
} catch (const std::exception& error) {
  std::fprintf(stderr, "lease_worker: %s\n", error.what());
  return 1;
}
