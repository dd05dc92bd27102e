// slot_worker: one process of a multi-process ConcurrencyLimiter test. Its threads take slots of one key
// of a private redis-server from a moment given on CLOCK_MONOTONIC, hold each briefly and release it,
// and it writes every holding's span (admission_spans.hpp) to a file for the test to count the slots
// held at once.
//
//   slot_worker PORT KEY MAX_IN_FLIGHT SLOT_TTL_MS THREADS START_NS RUN_MS HOLD_US OUT_FILE
//   slot_worker PORT KEY MAX_IN_FLIGHT SLOT_TTL_MS hold SLOTS
//       the second form takes SLOTS slots, prints "held" and waits to be killed: a crashed holder.
#include <swl/swl.hpp>

#include "admission_spans.hpp"
#include "redis_server.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Arguments {
  int port;
  std::string key;
  swl::Concurrency concurrency;
};

int hold(const Arguments& arguments, int slots) {
  swl::Connection connection = swl::Connection::tcp("127.0.0.1", arguments.port, swl::test::patient());
  swl::ConcurrencyLimiter<> limiter(connection, arguments.concurrency);
  std::vector<swl::ConcurrencyLimiter<>::Slot> held;
  while (static_cast<int>(held.size()) < slots) {
    if (auto slot = limiter.tryAcquire(arguments.key)) held.push_back(std::move(slot));
  }
  std::printf("held\n");
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// Each span starts after the acquire was answered and ends before the release is sent: inside the time
// Redis held the slot.
int hammer(const Arguments& arguments, int threads, std::int64_t start_ns, std::int64_t run_ms,
           std::chrono::microseconds hold_for, const std::string& out) {
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", arguments.port, swl::PoolOptions{static_cast<std::size_t>(threads)},
                                       swl::test::patient());
  swl::ConcurrencyLimiter<> limiter(pool, arguments.concurrency);
  std::vector<std::vector<swl::test::Span>> spans(static_cast<std::size_t>(threads));
  std::atomic<long> expired_while_held{0};
  swl::test::hammer(threads, start_ns, start_ns + run_ms * 1'000'000, false, [&](int thread) {
    auto slot = limiter.tryAcquire(arguments.key);
    if (!slot) return false;
    const std::int64_t acquired = swl::test::monotonicNs();
    std::this_thread::sleep_for(hold_for);
    spans[static_cast<std::size_t>(thread)].push_back({acquired, swl::test::monotonicNs()});
    if (!slot.release()) expired_while_held.fetch_add(1);
    return true;
  });
  std::vector<swl::test::Span> all;
  for (const auto& some : spans) all.insert(all.end(), some.begin(), some.end());
  swl::test::writeSpans(out, all);
  if (expired_while_held.load() == 0) return 0;
  std::fprintf(stderr, "slot_worker: %ld slots expired while held\n", expired_while_held.load());
  return 3;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 7 && argc != 10) {
    std::fprintf(stderr,
                 "usage: slot_worker PORT KEY MAX_IN_FLIGHT SLOT_TTL_MS (hold SLOTS | THREADS START_NS RUN_MS "
                 "HOLD_US OUT)\n");
    return 2;
  }
  const Arguments arguments{std::stoi(argv[1]), argv[2],
                            swl::Concurrency{std::stoll(argv[3]), std::chrono::milliseconds(std::stoll(argv[4]))}};
  if (argc == 7) return hold(arguments, std::stoi(argv[6]));
  return hammer(arguments, std::stoi(argv[5]), std::stoll(argv[6]), std::stoll(argv[7]),
                std::chrono::microseconds(std::stoll(argv[8])), argv[9]);
} catch (const std::exception& error) {
  std::fprintf(stderr, "slot_worker: %s\n", error.what());
  return 1;
}
