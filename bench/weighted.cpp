// Weighted requests, in one run on one private redis-server: what a window costs Redis per decision and
// per admitted request when requests weigh thousands of units (docs/weighted.md, "Token budgets and other weighted
// limits"), for three ways to keep it:
//   unit-per-entry  swl's log before 0.2, one sorted-set member per unit (kept here as the baseline);
//   per-request     SlidingWindowLimiter: one member per request whatever its cost, and a running sum;
//   bucketed        BucketedWindowLimiter<64>: at most 64 buckets per key.
//
//   build-bench/bench/weighted
//
// A manual clock drives every limiter, so each run sees the same trace:
//   tokens:  1,000,000 tokens per minute per key, requests of 4,000 tokens, one every 240 ms for two
//            minutes: the first minute fills the window (250 admitted), the second runs at steady state
//            (each admission trims one), on 100 API keys (one for unit-per-entry). Redis CPU per decision
//            is INFO commandstats usec_per_call over the second minute; memory is MEMORY USAGE
//            (SAMPLES 0) of one key with the window full.
//   huge:    one request of 10^9 units under a limit of 2^40: the wall time of that one decision.
//   daily:   70,000 per day, 70,000 requests spread over one day: the key's memory at the end.
//   overload: 100 per second, a request every 5 ms (twice the limit) for 100 seconds: how many the
//            bucketed window admits against the exact log (its under-admission; bound 1/64).

#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"
#include "unit_per_entry_log.hpp"

#include <chrono>
#include <cstdio>
#include <string>

namespace {

using namespace std::chrono_literals;
using Micros = std::chrono::microseconds;

long long memoryOf(swl::Connection& connection, const std::string& redis_key) {
  return swl::test::integerReply(connection, {"MEMORY", "USAGE", redis_key, "SAMPLES", "0"});
}

struct TokensRow {
  int admitted = 0;
  long long memory = 0;
  double usec_per_call = 0;
};

// 1,000,000 tokens per minute, requests of 4,000 every 240 ms for two minutes, on each of `keys` API keys
// (more keys average the CPU figure over more calls; the unit-per-entry log is measured on one, as each
// of its calls writes 4,000 members).
template <class Limiter>
TokensRow tokens(swl::Connection& connection, int keys) {
  swl::testing::ManualClock clock;
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  Limiter limiter(connection, swl::Limit{1'000'000, 60s}, options);
  swl::test::textReply(connection, {"FLUSHALL"});
  const auto round = [&](TokensRow& row) {
    for (int key = 0; key < keys; ++key) {
      row.admitted += limiter.tryAcquire("api-key:" + std::to_string(key), 4'000).allowed;
    }
  };
  TokensRow row;
  for (int i = 0; i < 250; ++i, clock.advance(240ms)) round(row);
  row.memory = memoryOf(connection, limiter.redisKey("api-key:0"));  // the window full: 250 requests
  swl::test::textReply(connection, {"CONFIG", "RESETSTAT"});
  for (int i = 0; i < 250; ++i, clock.advance(240ms)) round(row);
  row.admitted /= keys;
  row.usec_per_call = swl::test::evalshaUsecPerCall(connection);
  return row;
}

// One decision of 10^9 units under a limit of 2^40, in milliseconds of wall time.
template <class Limiter>
double huge(swl::Connection& connection) {
  swl::test::textReply(connection, {"FLUSHALL"});
  Limiter limiter(connection, swl::Limit{std::int64_t{1} << 40, 60s});
  limiter.tryAcquire("warm-up");
  const auto start = std::chrono::steady_clock::now();
  const swl::Decision decision = limiter.tryAcquire("huge", 1'000'000'000);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!decision.allowed) throw std::runtime_error("the huge request was refused");
  return ms;
}

// 70,000 requests spread over a day under 70,000 per day: the key's memory at the end.
template <class Limiter>
long long daily(swl::Connection& connection, int& admitted) {
  swl::testing::ManualClock clock;
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  swl::test::textReply(connection, {"FLUSHALL"});
  Limiter limiter(connection, swl::Limit{70'000, 24h}, options);
  const Micros step = Micros(24h) / 70'000;
  admitted = 0;
  for (int i = 0; i < 70'000; ++i, clock.advance(step)) admitted += limiter.tryAcquire("daily").allowed;
  return memoryOf(connection, limiter.redisKey("daily"));
}

// Twice the limit for 100 windows: how many are admitted.
template <class Limiter>
long overload(swl::Connection& connection) {
  swl::testing::ManualClock clock;
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  swl::test::textReply(connection, {"FLUSHALL"});
  Limiter limiter(connection, swl::Limit{100, 1s}, options, swl::PrefixKey("overload"));
  long admitted = 0;
  for (int i = 0; i < 20'000; ++i, clock.advance(5ms)) admitted += limiter.tryAcquire("k").allowed;
  return admitted;
}

using UnitPerEntry = swl::RedisLimiter<swl::bench::UnitPerEntryLog>;
using PerRequest = swl::SlidingWindowLimiter<>;
using Bucketed = swl::BucketedWindowLimiter<64>;

}  // namespace

int main() try {
  swl::test::RedisServer server;
  auto connection = server.connect();

  std::printf("1,000,000 tokens/min per key, requests of 4,000 tokens (a full window holds 250):\n\n");
  std::printf(
      "| window | admitted of 500 | Redis CPU per decision (usec_per_call) | key at a full window | "
      "per admitted request |\n|---|---:|---:|---:|---:|\n");
  const auto row = [](const char* name, const TokensRow& measured) {
    std::printf("| %s | %d | %.2f us | %.1f KB | %.0f B |\n", name, measured.admitted, measured.usec_per_call,
                measured.memory / 1024.0, measured.memory / 250.0);
  };
  const TokensRow unit = tokens<UnitPerEntry>(connection, 1);
  const TokensRow per_request = tokens<PerRequest>(connection, 100);
  const TokensRow bucketed = tokens<Bucketed>(connection, 100);
  row("unit-per-entry (before 0.2)", unit);
  row("per-request (SlidingWindowLimiter)", per_request);
  row("bucketed, B = 64 (BucketedWindowLimiter<64>)", bucketed);
  std::printf("\nRedis CPU per decision, per-request / unit-per-entry: %.5f; memory per request: %.5f\n",
              per_request.usec_per_call / unit.usec_per_call, double(per_request.memory) / double(unit.memory));

  swl::test::textReply(connection, {"FLUSHALL"});
  std::printf("\nOne request of 10^9 units under a limit of 2^40 (unit-per-entry not run: 10^9 members):\n");
  const double huge_log = huge<PerRequest>(connection);
  const double huge_bucketed = huge<Bucketed>(connection);
  std::printf("  per-request %.3f ms, bucketed %.3f ms (wall time of the decision, round trip included)\n", huge_log,
              huge_bucketed);

  swl::test::textReply(connection, {"FLUSHALL"});
  int log_admitted = 0, bucketed_admitted = 0;
  const long long log_daily = daily<PerRequest>(connection, log_admitted);
  const long long bucketed_daily = daily<Bucketed>(connection, bucketed_admitted);
  std::printf("\n70,000 per day, 70,000 requests over one day:\n");
  std::printf("  per-request log: %d admitted, key %.1f KB (%.0f B per request)\n", log_admitted, log_daily / 1024.0,
              log_daily / 70'000.0);
  std::printf("  bucketed, B = 64: %d admitted, key %.2f KB; bucketed / log memory %.5f\n", bucketed_admitted,
              bucketed_daily / 1024.0, double(bucketed_daily) / double(log_daily));

  swl::test::textReply(connection, {"FLUSHALL"});
  const long exact = overload<PerRequest>(connection);
  const long rounded = overload<Bucketed>(connection);
  std::printf(
      "\n100 per second asked twice over for 100 seconds: exact log admits %ld, bucketed %ld: "
      "under-admission %.4f (bound 1/64 = %.4f)\n",
      exact, rounded, 1.0 - double(rounded) / double(exact), 1.0 / 64);
} catch (const std::exception& error) {
  std::fprintf(stderr, "weighted: %s\n", error.what());
  return 1;
}
