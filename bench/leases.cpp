// leases: what LeasingLimiter buys on a hot key, against SlidingWindowLimiter on the same workload in the
// same run, and what it costs on cold keys. One private redis-server; each run is PROCESSES processes of
// THREADS threads (this program again, as workers), all starting at one moment and asking as fast as
// they can for SECONDS:
//   hot:  one key, limit LIMIT per WINDOW_MS (demand far above it);
//   cold: COLD_KEYS keys taken in turn, each asked rarely (limit LIMIT each, never reached); five
//         plain and leasing pairs, interleaved (the table shows the median pair).
// A worker keeps the span of every admission (admission_spans.hpp); the busiest window-long interval
// across all processes is checked against the limit. Redis calls are the server's EVALSHA count.
//
//   build-bench/bench/leases [SECONDS=5] [PROCESSES=2] [THREADS=4] [LIMIT=100000] [WINDOW_MS=1000] [COLD_KEYS=10000]
//
// Progress goes to stderr; the last stdout line is one JSON object.
#include <swl/swl.hpp>

#include "support/admission_spans.hpp"
#include "support/child_process.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Workload {
  std::string limiter;  // "plain" or "leasing"
  std::string keys;     // "hot" or "cold"
  int port;
  int threads;
  std::int64_t limit;
  std::int64_t window_ms;
  int cold_keys;
  std::int64_t start_ns;
  std::int64_t run_ms;
  std::string prefix;  // keeps each run's keys apart
};

// A worker: runs `workload` and prints "decisions admitted cpu_us" to stdout, admission spans to `spans_path`.
template <class Limiter>
int work(Limiter& limiter, const Workload& workload, const std::string& spans_path) {
  const bool hot = workload.keys == "hot";
  std::vector<std::string> keys;
  for (int i = 0; i < (hot ? 1 : workload.cold_keys); ++i) keys.push_back(workload.prefix + std::to_string(i));
  // Each thread takes the keys in turn from its own place, a different one in each process; each cursor
  // has a cache line of its own.
  struct alignas(64) Cursor {
    std::size_t at;
  };
  std::vector<Cursor> next;
  for (int t = 0; t < workload.threads; ++t) {
    next.push_back({(static_cast<std::size_t>(t) * keys.size() / static_cast<std::size_t>(workload.threads) +
                     static_cast<std::size_t>(::getpid())) %
                    keys.size()});
  }
  const swl::test::Hammering run = swl::test::hammer(
      workload.threads, workload.start_ns, workload.start_ns + workload.run_ms * 1'000'000, hot, [&](int thread) {
        std::size_t& at = next[static_cast<std::size_t>(thread)].at;
        const bool allowed = limiter.tryAcquire(keys[at]).allowed;
        at = at + 1 == keys.size() ? 0 : at + 1;
        return allowed;
      });
  swl::test::writeSpans(spans_path, run.spans);
  rusage used{};
  ::getrusage(RUSAGE_SELF, &used);
  const auto micros = [](const timeval& time) { return std::int64_t{time.tv_sec} * 1'000'000 + time.tv_usec; };
  std::printf("%lld %lld %lld\n", static_cast<long long>(run.decisions), static_cast<long long>(run.admitted),
              static_cast<long long>(micros(used.ru_utime) + micros(used.ru_stime)));
  return 0;
}

int worker(char** argv) {
  const Workload workload{argv[2],
                          argv[3],
                          std::atoi(argv[4]),
                          std::atoi(argv[5]),
                          std::atoll(argv[6]),
                          std::atoll(argv[7]),
                          std::atoi(argv[8]),
                          std::atoll(argv[9]),
                          std::atoll(argv[10]),
                          argv[11]};
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", workload.port,
                                       swl::PoolOptions{static_cast<std::size_t>(workload.threads)});
  const swl::Limit limit{workload.limit, std::chrono::milliseconds(workload.window_ms)};
  if (workload.limiter == "leasing") {
    swl::LeasingLimiter<> limiter(pool, limit);
    return work(limiter, workload, argv[12]);
  }
  swl::SlidingWindowLimiter<> limiter(pool, limit);
  return work(limiter, workload, argv[12]);
}

struct Result {
  std::string name;
  std::vector<double> per_process;  // decisions/s of each process
  double decisions_per_second = 0;  // mean per process
  std::int64_t decisions = 0;
  std::int64_t admitted = 0;
  std::int64_t redis_calls = 0;
  std::int64_t busiest_window = 0;
  std::int64_t cpu_us = 0;  // the workers' CPU (user + system), all processes
  double cpuPerDecision() const { return static_cast<double>(cpu_us) / static_cast<double>(decisions); }
};

Result run(const std::string& limiter, const std::string& keys, swl::test::RedisServer& server, int processes,
           int threads, std::int64_t limit, std::int64_t window_ms, int cold_keys, std::int64_t seconds) {
  static int runs = 0;
  const std::string self = "/proc/" + std::to_string(::getpid()) + "/exe";
  swl::Connection connection = server.connect();
  const long long calls_before = swl::test::commandCalls(connection, "evalsha");
  const std::int64_t start_ns = swl::test::monotonicNs() + 500'000'000;
  const std::string prefix = limiter + "-" + keys + "-" + std::to_string(++runs) + ":";
  std::vector<std::unique_ptr<swl::test::ChildProcess>> children;
  std::vector<std::string> outputs, spans_paths;
  for (int p = 0; p < processes; ++p) {
    const std::string base = "/tmp/swl-leases-" + std::to_string(::getpid()) + "-" + std::to_string(p);
    outputs.push_back(base + ".out");
    spans_paths.push_back(base + ".spans");
    children.push_back(std::make_unique<swl::test::ChildProcess>());
    children.back()->start({self, "--worker", limiter, keys, std::to_string(server.port()), std::to_string(threads),
                            std::to_string(limit), std::to_string(window_ms), std::to_string(cold_keys),
                            std::to_string(start_ns), std::to_string(seconds * 1000), prefix, spans_paths.back()},
                           outputs.back());
  }
  Result result;
  result.name = limiter + "-" + keys;
  std::vector<swl::test::Span> spans;
  for (int p = 0; p < processes; ++p) {
    if (children[static_cast<std::size_t>(p)]->waitForExit(std::chrono::milliseconds(seconds * 1000 + 60'000)) != 0) {
      std::fprintf(stderr, "leases: a %s worker failed\n", result.name.c_str());
      std::exit(1);
    }
    long long decisions = 0, admitted = 0, cpu_us = 0;
    std::ifstream(outputs[static_cast<std::size_t>(p)]) >> decisions >> admitted >> cpu_us;
    result.cpu_us += cpu_us;
    result.per_process.push_back(static_cast<double>(decisions) / static_cast<double>(seconds));
    result.decisions += decisions;
    result.admitted += admitted;
    const auto some = swl::test::readSpans(spans_paths[static_cast<std::size_t>(p)]);
    spans.insert(spans.end(), some.begin(), some.end());
    std::remove(outputs[static_cast<std::size_t>(p)].c_str());
    std::remove(spans_paths[static_cast<std::size_t>(p)].c_str());
  }
  result.decisions_per_second = static_cast<double>(result.decisions) / static_cast<double>(seconds * processes);
  result.redis_calls = swl::test::commandCalls(connection, "evalsha") - calls_before;
  if (keys == "hot") result.busiest_window = swl::test::mostInOneWindow(spans, window_ms * 1'000'000);
  std::fprintf(stderr,
               "leases: %-12s %10.0f decisions/s per process, %lld admitted, %lld Redis calls, busiest window %lld, "
               "%.2f us client CPU per decision\n",
               result.name.c_str(), result.decisions_per_second, static_cast<long long>(result.admitted),
               static_cast<long long>(result.redis_calls), static_cast<long long>(result.busiest_window),
               result.cpuPerDecision());
  return result;
}

std::string json(const Result& result) {
  std::string per_process;
  for (const double rate : result.per_process) per_process += (per_process.empty() ? "" : ",") + std::to_string(rate);
  return "\"" + result.name +
         "\":{\"decisions_per_second_per_process\":" + std::to_string(result.decisions_per_second) +
         ",\"per_process\":[" + per_process + "],\"decisions\":" + std::to_string(result.decisions) +
         ",\"admitted\":" + std::to_string(result.admitted) + ",\"redis_calls\":" + std::to_string(result.redis_calls) +
         ",\"busiest_window\":" + std::to_string(result.busiest_window) +
         ",\"client_cpu_us_per_decision\":" + std::to_string(result.cpuPerDecision()) + "}";
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc == 13 && std::string(argv[1]) == "--worker") return worker(argv);
  const std::int64_t seconds = argc > 1 ? std::atoll(argv[1]) : 5;
  const int processes = argc > 2 ? std::atoi(argv[2]) : 2;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 4;
  const std::int64_t limit = argc > 4 ? std::atoll(argv[4]) : 100'000;
  const std::int64_t window_ms = argc > 5 ? std::atoll(argv[5]) : 1000;
  const int cold_keys = argc > 6 ? std::atoi(argv[6]) : 10'000;
  swl::test::RedisServer server;

  const Result plain_hot = run("plain", "hot", server, processes, threads, limit, window_ms, cold_keys, seconds);
  const Result leasing_hot = run("leasing", "hot", server, processes, threads, limit, window_ms, cold_keys, seconds);
  // Cold keys cost a round trip either way, so loopback noise decides a single pair: five pairs,
  // interleaved, and the median of their ratios.
  std::vector<Result> plain_colds, leasing_colds;
  std::vector<double> cold_ratios;
  for (int round = 0; round < 5; ++round) {
    plain_colds.push_back(run("plain", "cold", server, processes, threads, limit, window_ms, cold_keys, seconds));
    leasing_colds.push_back(run("leasing", "cold", server, processes, threads, limit, window_ms, cold_keys, seconds));
    cold_ratios.push_back(leasing_colds.back().decisions_per_second / plain_colds.back().decisions_per_second);
  }
  std::vector<double> sorted_ratios = cold_ratios;
  std::sort(sorted_ratios.begin(), sorted_ratios.end());
  const double cold_ratio = sorted_ratios[2];
  const std::size_t median_round =
      static_cast<std::size_t>(std::find(cold_ratios.begin(), cold_ratios.end(), cold_ratio) - cold_ratios.begin());
  const Result& plain_cold = plain_colds[median_round];
  const Result& leasing_cold = leasing_colds[median_round];

  const double speedup = leasing_hot.decisions_per_second / plain_hot.decisions_per_second;
  const double calls_per_decision =
      static_cast<double>(leasing_hot.redis_calls) / static_cast<double>(leasing_hot.decisions);
  const double utilization =
      static_cast<double>(leasing_hot.admitted) /
      (static_cast<double>(limit) * static_cast<double>(seconds) * 1000.0 / static_cast<double>(window_ms));
  const std::int64_t over =
      std::max<std::int64_t>(0, std::max(leasing_hot.busiest_window, plain_hot.busiest_window) - limit);

  std::printf("| run | decisions/s per process | admitted | Redis calls | busiest window |\n|---|--:|--:|--:|--:|\n");
  for (const Result* result : {&plain_hot, &leasing_hot, &plain_cold, &leasing_cold}) {
    std::printf("| %s | %.0f | %lld | %lld | %s |\n", result->name.c_str(), result->decisions_per_second,
                static_cast<long long>(result->admitted), static_cast<long long>(result->redis_calls),
                result->name.find("hot") == std::string::npos ? "-" : std::to_string(result->busiest_window).c_str());
  }
  std::printf("\n| target | measured | goal |\n|---|--:|---|\n");
  std::printf("| leasing-hot decisions/s per process | %.0f | >= 1,000,000 |\n", leasing_hot.decisions_per_second);
  std::printf("| leasing-hot / plain-hot | %.1fx | >= 10x |\n", speedup);
  std::printf("| Redis calls per decision (leasing-hot) | 1/%.0f | <= 1/20 |\n", 1.0 / calls_per_decision);
  std::printf("| utilization: admitted / (limit x seconds) | %.3f | >= 0.95 |\n", utilization);
  std::printf("| admissions over the limit in any window | %lld | 0 |\n", static_cast<long long>(over));
  std::string ratios;
  for (const double ratio : cold_ratios) ratios += (ratios.empty() ? "" : " ") + std::to_string(ratio).substr(0, 5);
  std::printf(
      "| leasing-cold / plain-cold, decisions/s (median of 5 interleaved pairs: %s) | %.3f | >= 1 (within noise) |\n",
      ratios.c_str(), cold_ratio);
  std::printf("| client CPU per cold decision, leasing / plain (that pair) | %.2f / %.2f us | |\n\n",
              leasing_cold.cpuPerDecision(), plain_cold.cpuPerDecision());
  std::printf(
      "{\"seconds\":%lld,\"processes\":%d,\"threads\":%d,\"limit\":%lld,\"window_ms\":%lld,\"cold_keys\":%d,%s,%s,%s,%"
      "s,"
      "\"speedup\":%.3f,\"redis_calls_per_decision\":%.6f,\"utilization\":%.4f,\"over_limit\":%lld,"
      "\"cold_ratio\":%.4f}\n",
      static_cast<long long>(seconds), processes, threads, static_cast<long long>(limit),
      static_cast<long long>(window_ms), cold_keys, json(plain_hot).c_str(), json(leasing_hot).c_str(),
      json(plain_cold).c_str(), json(leasing_cold).c_str(), speedup, calls_per_decision, utilization,
      static_cast<long long>(over), cold_ratio);
  return over == 0 ? 0 : 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "leases: %s\n", error.what());
  return 1;
}
