// LeasingLimiter: hot keys decided in memory from leased units, never over the limit in any window. In
// one process with a manual clock (deterministic: leases, give-backs, refusals repeated here, random
// traces held to the limit), and across processes on Redis's clock (client-side spans of every
// admission; a holder killed with its lease in hand).

#include <swl/swl.hpp>

#include "support/admission_spans.hpp"
#include "support/child_process.hpp"
#include "support/log_layout.hpp"
#include "support/manual_time.hpp"
#include "support/replies.hpp"
#include "support/workers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::integerReply;
using swl::test::ManualTime;

namespace {

using LeasingLimiter = swl::LeasingLimiter<>;

swl::LeaseOptions leaseFor(std::chrono::microseconds duration, std::int64_t room_divisor = 4) {
  swl::LeaseOptions leases;
  leases.duration = duration;
  leases.room_divisor = room_divisor;
  return leases;
}

// The log's entries as member -> score, its bookkeeping ('#' and the like) left out.
std::map<std::string, std::int64_t> entriesOf(swl::Connection& connection, const std::string& redis_key) {
  const swl::Reply reply = connection.command({"ZRANGE", redis_key, "0", "-1", "WITHSCORES"});
  std::map<std::string, std::int64_t> entries;
  for (std::size_t i = 0; i + 1 < reply->size(); i += 2) {
    const std::string member((*reply)[i].text());
    if (member[0] != '#') entries[member] = std::stoll(std::string((*reply)[i + 1].text()));
  }
  return entries;
}

std::int64_t nowOf(const ManualTime& time) { return time.clock.now().count(); }

// Two requests 100 us apart: the second shows a demand of 10,000 units per second, so it asks for a
// lease. Returns the second decision.
swl::Decision warmUp(LeasingLimiter& limiter, ManualTime& time, const std::string& key) {
  limiter.tryAcquire(key);
  time.clock.advance(100us);
  return limiter.tryAcquire(key);
}

// `count` one-unit requests for "k" through a plain limiter, at the clock's present reading: a window
// counted by entries, as plain requests leave it.
void fillWithPlainRequests(ManualTime& time, const swl::Limit& limit, int count) {
  swl::SlidingWindowLimiter<> plain(time.connection, limit, time.options);
  for (int i = 0; i < count; ++i) REQUIRE(plain.tryAcquire("k").allowed);
}

}  // namespace

TEST_CASE("A key seen once costs one entry at its own time, as with a SlidingWindowLimiter") {
  ManualTime time;
  LeasingLimiter limiter(time.connection, swl::Limit{100, 1s}, time.options);
  const swl::Decision decision = limiter.tryAcquire("cold", 3);
  CHECK(decision.allowed);
  CHECK(decision.tier == swl::Tier::redis);
  CHECK(decision.remaining == 97);
  const auto entries = entriesOf(time.connection, "swl:cold");
  REQUIRE(entries.size() == 1);
  CHECK(swl::test::unitsOfEntry(entries.begin()->first) == 3);
  CHECK(entries.begin()->second == nowOf(time));
}

TEST_CASE("A key in demand is leased: its next requests are decided here, from one entry scored at the lease's end") {
  ManualTime time;
  LeasingLimiter limiter(time.connection, swl::Limit{100, 1s}, time.options, leaseFor(20ms));
  const swl::Decision first = limiter.tryAcquire("hot");
  CHECK(first.tier == swl::Tier::redis);
  time.clock.advance(100us);
  const std::int64_t leased_at = nowOf(time);
  // 10,000 units/s for 20 ms is 200 units, but a lease takes at most a quarter of the room: 99 / 4.
  const swl::Decision second = limiter.tryAcquire("hot");
  CHECK(second.allowed);
  CHECK(second.tier == swl::Tier::redis);
  CHECK(second.remaining == 100 - 1 - 24);
  const auto entries = entriesOf(time.connection, "swl:hot");
  REQUIRE(entries.size() == 2);
  const auto lease = std::find_if(entries.begin(), entries.end(),
                                  [](const auto& entry) { return swl::test::unitsOfEntry(entry.first) == 24; });
  REQUIRE(lease != entries.end());
  CHECK(lease->second == leased_at + 20'000);

  const long long calls = swl::test::commandCalls(time.connection, "evalsha");
  for (int i = 0; i < 23; ++i) {
    const swl::Decision local = limiter.tryAcquire("hot");
    CHECK(local.allowed);
    CHECK(local.tier == swl::Tier::lease);
    CHECK(local.remaining == 22 - i);
  }
  CHECK(swl::test::commandCalls(time.connection, "evalsha") == calls);
  CHECK(limiter.tryAcquire("hot").tier == swl::Tier::redis);  // used up: the next lease
}

TEST_CASE("A lease is used only until its end, less a margin, and then asked for again") {
  ManualTime time;
  LeasingLimiter limiter(time.connection, swl::Limit{1000, 1s}, time.options, leaseFor(20ms));
  REQUIRE(warmUp(limiter, time, "k").allowed);
  time.clock.advance(20ms - 202us);  // the margin is 1% of the lease plus 1 us
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::lease);
  time.clock.advance(1us);
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::redis);
}

TEST_CASE("What a lease did not use is given back on destruction: what it used counts until its end + window") {
  ManualTime time;
  swl::SlidingWindowLimiter<> plain(time.connection, swl::Limit{100, 1s}, time.options);
  {
    LeasingLimiter limiter(time.connection, swl::Limit{100, 1s}, time.options, leaseFor(20ms));
    REQUIRE(warmUp(limiter, time, "k").allowed);  // 1 unit, then a lease of 24
    for (int i = 0; i < 4; ++i) REQUIRE(limiter.tryAcquire("k").tier == swl::Tier::lease);
    CHECK(plain.peek("k").used == 25);
    time.clock.advance(1ms);
  }
  CHECK(plain.peek("k").used == 6);
  // The used units keep the lease's entry, and its place in time: the lease's end.
  const auto entries = entriesOf(time.connection, "swl:k");
  const auto given_back = std::find_if(entries.begin(), entries.end(), [](const auto& entry) {
    return entry.first[0] == '+' && swl::test::unitsOfEntry(entry.first) == 5;
  });
  REQUIRE(given_back != entries.end());
  CHECK(given_back->second == nowOf(time) - 1'000 + 20'000);
}

TEST_CASE("giveBack() frees the units other instances are refused for, and the next lease gives back the last") {
  ManualTime time;
  swl::SlidingWindowLimiter<> plain(time.connection, swl::Limit{100, 1s}, time.options);
  LeasingLimiter limiter(time.connection, swl::Limit{100, 1s}, time.options, leaseFor(20ms));
  REQUIRE(warmUp(limiter, time, "k").allowed);  // 25 units recorded, 23 of them unused
  for (int i = 0; i < 75; ++i) REQUIRE(plain.tryAcquire("k").allowed);
  CHECK_FALSE(plain.tryAcquire("k").allowed);
  CHECK(limiter.giveBack() == 1);
  CHECK(limiter.giveBack() == 0);
  CHECK(plain.peek("k").used == 77);
  CHECK(plain.tryAcquire("k", 23).allowed);

  SECTION("a lease call gives the previous lease back in the same call") {
    ManualTime other;
    swl::SlidingWindowLimiter<> observer(other.connection, swl::Limit{1000, 1s}, other.options);
    LeasingLimiter leasing(other.connection, swl::Limit{1000, 1s}, other.options, leaseFor(20ms));
    REQUIRE(warmUp(leasing, other, "k").allowed);  // 1 + a lease of 201 (demand 200 per lease)
    REQUIRE(leasing.tryAcquire("k").tier == swl::Tier::lease);
    CHECK(observer.peek("k").used == 202);
    other.clock.advance(20ms);  // the lease has ended, with 199 units unused
    const swl::Decision next = leasing.tryAcquire("k");
    CHECK(next.tier == swl::Tier::redis);
    const std::int64_t next_lease = observer.peek("k").used - 3;
    CHECK(next_lease >= 1);
    CHECK(next.remaining == 1000 - 3 - next_lease);
  }
}

TEST_CASE("A refusal from Redis is repeated here until its retry_after, without a call") {
  ManualTime time;
  LeasingLimiter limiter(time.connection, swl::Limit{10, 1s}, time.options, leaseFor(20ms));
  fillWithPlainRequests(time, swl::Limit{10, 1s}, 10);
  time.clock.advance(300ms);
  const swl::Decision refused = limiter.tryAcquire("k");
  CHECK_FALSE(refused.allowed);
  CHECK(refused.tier == swl::Tier::redis);
  CHECK(refused.retry_after == 700ms);
  const long long calls = swl::test::commandCalls(time.connection, "evalsha");
  time.clock.advance(200ms);
  const swl::Decision again = limiter.tryAcquire("k");
  CHECK_FALSE(again.allowed);
  CHECK(again.tier == swl::Tier::blocked_cache);
  CHECK(again.retry_after == 500ms);
  CHECK(limiter.tryAcquire("k", 2).tier == swl::Tier::blocked_cache);  // a larger cost waits at least as long
  CHECK(swl::test::commandCalls(time.connection, "evalsha") == calls);
  time.clock.advance(500ms);
  const swl::Decision admitted = limiter.tryAcquire("k");
  CHECK(admitted.allowed);
  CHECK(admitted.tier == swl::Tier::redis);
}

TEST_CASE("A lease refused by a window of one-unit entries answers when to come back") {
  // Counted by entries (no lease recorded yet), the set has no sums: the wait is its oldest entry's.
  ManualTime time;
  LeasingLimiter limiter(time.connection, swl::Limit{100, 1s}, time.options, leaseFor(20ms));
  fillWithPlainRequests(time, swl::Limit{100, 1s}, 99);
  time.clock.advance(300ms);
  REQUIRE(limiter.tryAcquire("k").allowed);
  time.clock.advance(100us);
  const swl::Decision refused = limiter.tryAcquire("k");  // in demand: it asks for a lease
  CHECK_FALSE(refused.allowed);
  CHECK(refused.tier == swl::Tier::redis);
  CHECK(refused.remaining == 0);
  CHECK(refused.retry_after == 700ms - 100us);  // the oldest entry, recorded at the start, leaves
}

TEST_CASE("The log outlives its newest lease's end plus the window, whatever writes to it later") {
  ManualTime time;
  swl::SlidingWindowLimiter<> plain(time.connection, swl::Limit{1000, 1s}, time.options);
  LeasingLimiter limiter(time.connection, swl::Limit{1000, 1s}, time.options, leaseFor(500ms));
  REQUIRE(warmUp(limiter, time, "k").tier == swl::Tier::redis);
  REQUIRE(plain.tryAcquire("k").allowed);  // a plain write sets the expiry after the lease's
  CHECK(integerReply(time.connection, {"PTTL", "swl:k"}) > 1400);
}

TEST_CASE("Across leasing and plain limiters, no window ever holds more than the limit (random traces)") {
  const auto seed = GENERATE(1u, 2u, 3u, 4u, 5u, 6u);
  ManualTime time;
  const swl::Limit limit{40, 1s};
  std::optional<LeasingLimiter> first;
  first.emplace(time.connection, limit, time.options, leaseFor(100ms));
  LeasingLimiter second(time.connection, limit, time.options, leaseFor(30ms, 2));
  swl::SlidingWindowLimiter<> plain(time.connection, limit, time.options);
  std::mt19937 random(seed);
  std::vector<std::pair<std::int64_t, std::int64_t>> admitted;  // (time, units)
  int leased = 0, given_back = 0;
  for (int step = 0; step < 6000; ++step) {
    const int roll = static_cast<int>(random() % 1000);
    if (roll < 3) {
      time.clock.advance(std::chrono::microseconds(100'000 + random() % 1'100'000));  // a quiet spell
    } else {
      time.clock.advance(std::chrono::microseconds(random() % (roll < 500 ? 200 : 5000)));
    }
    if (roll >= 3 && roll < 8) given_back += static_cast<int>(second.giveBack());
    if (roll == 4) first.emplace(time.connection, limit, time.options, leaseFor(100ms));  // gives back, starts cold
    const std::int64_t cost = 1 + static_cast<std::int64_t>(random() % 3);
    const int who = static_cast<int>(random() % 10);
    const swl::Decision decision = who < 5   ? first->tryAcquire("k", cost)
                                   : who < 9 ? second.tryAcquire("k", cost)
                                             : plain.tryAcquire("k", cost);
    if (decision.tier == swl::Tier::lease) ++leased;
    if (decision.allowed) admitted.emplace_back(nowOf(time), cost);
  }
  INFO("seed " << seed << ", " << admitted.size() << " admitted, " << leased << " from leases, " << given_back
               << " leases given back");
  REQUIRE(leased > 30);
  // Every window (t - window, t] ending at an admission holds at most the limit.
  std::int64_t most = 0, units = 0;
  std::size_t oldest = 0;
  for (const auto& [at, cost] : admitted) {
    units += cost;
    while (admitted[oldest].first <= at - limit.window.count()) units -= admitted[oldest++].second;
    most = std::max(most, units);
  }
  CHECK(most <= limit.max_requests);
  CHECK(most >= limit.max_requests * 3 / 4);  // and the limit is approached: leases do not starve the key
}

TEST_CASE("While Redis cannot answer, a lease in hand still admits: then the failure policy answers") {
  ManualTime time;
  time.options.on_failure = swl::FailurePolicy::allow;
  LeasingLimiter limiter(time.connection, swl::Limit{100, 1s}, time.options, leaseFor(20ms));
  REQUIRE(warmUp(limiter, time, "k").allowed);  // a lease of 24, one of them used
  time.server.stop();
  for (int i = 0; i < 23; ++i) REQUIRE(limiter.tryAcquire("k").tier == swl::Tier::lease);
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::fail_open);
}

TEST_CASE("A window too short for a lease to pay is decided by Redis each time") {
  ManualTime time;
  LeasingLimiter limiter(time.connection, swl::Limit{100, 10ms}, time.options);
  CHECK(limiter.leaseDuration() == 200us);
  for (int i = 0; i < 20; ++i) {
    CHECK(limiter.tryAcquire("k").tier == swl::Tier::redis);
    time.clock.advance(10us);
  }
}

TEST_CASE("A LeasingLimiter refuses options it cannot keep") {
  ManualTime time;
  const swl::Limit limit{100, 1s};
  swl::LimiterOptions counted = time.options;
  counted.rejected = swl::RejectedRequests::counted;
  CHECK_THROWS_WITH(LeasingLimiter(time.connection, limit, counted),
                    Catch::Contains("rejected requests cannot be counted"));
  CHECK_THROWS_WITH(LeasingLimiter(time.connection, limit, time.options, leaseFor(2s)),
                    Catch::Contains("not in 0..the window"));
  CHECK_THROWS_WITH(LeasingLimiter(time.connection, limit, time.options, leaseFor(20ms, 1)),
                    Catch::Contains("room_divisor 1 is below 2"));
  LeasingLimiter limiter(time.connection, limit, time.options);
  CHECK(limiter.leaseDuration() == 20ms);
  CHECK_THROWS_AS(limiter.tryAcquire("k", 101), swl::InvalidArgument);
  CHECK_THROWS_AS(limiter.tryAcquire("", 1), swl::InvalidArgument);
}

TEST_CASE("Processes leasing one key never admit more than the limit in any window (client-side spans)") {
  swl::test::RedisServer server;
  const std::string worker = swl::test::workerProgram("SWL_LEASE_WORKER");
  const swl::Limit limit{300, 300ms};
  const std::int64_t start_ns = swl::test::monotonicNs() + 300'000'000;  // all start together
  const std::int64_t run_ms = 1500;
  const std::vector<std::string> arguments{worker,
                                           std::to_string(server.port()),
                                           "k",
                                           "300",
                                           "300",
                                           "30",
                                           "3",
                                           std::to_string(start_ns),
                                           std::to_string(run_ms)};
  const std::vector<swl::test::Span> spans = swl::test::spansOfWorkers({arguments, arguments, arguments});
  const std::int64_t most = swl::test::mostInOneWindow(spans, 300'000'000);
  INFO(spans.size() << " admitted in " << run_ms << " ms; the busiest window held " << most);
  CHECK(most <= limit.max_requests);
  CHECK(static_cast<std::int64_t>(spans.size()) >= limit.max_requests * run_ms / 300 / 2);
}

TEST_CASE("A holder that dies with a lease in hand gives nothing back: its units expire by themselves") {
  swl::test::RedisServer server;
  swl::Connection connection = server.connect();
  swl::test::ChildProcess holder;
  swl::test::startHolding(holder, {swl::test::workerProgram("SWL_LEASE_WORKER"), std::to_string(server.port()), "k",
                                   "100", "500", "100", "hold"});
  holder.kill();

  // Redis's clock is this host's: a manual clock started from it reads the log as Redis would, and moves
  // past the dead lease's end without waiting for it.
  swl::testing::ManualClock clock(swl::Clock::system().now());
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  swl::SlidingWindowLimiter<> plain(connection, swl::Limit{100, 500ms}, options);
  const swl::Usage held = plain.peek("k");
  INFO("the dead holder's units: " << held.used);
  CHECK(held.used >= 2);
  CHECK(held.reset_after <= 600ms);
  clock.advance(held.reset_after - 1us);
  // The requests before the lease have left; the lease's entry, the newest, still counts all its units:
  // the holder used one of them, and nothing gave the rest back.
  const std::int64_t lease_units = plain.peek("k").used;
  CHECK(lease_units >= 2);
  CHECK(lease_units <= held.used);
  clock.advance(1us);
  CHECK(plain.peek("k").used == 0);
  for (int i = 0; i < 100; ++i) REQUIRE(plain.tryAcquire("k").allowed);
}

TEST_CASE("Threads share a key's lease: one call at a time asks for the next, and no window passes the limit") {
  swl::test::RedisServer server;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), swl::PoolOptions{8});
  swl::Connection connection = server.connect();
  const swl::Limit limit{500, 200ms};
  LeasingLimiter limiter(pool, limit, {}, leaseFor(10ms));
  struct alignas(64) Leased {
    long decisions = 0;
  };
  std::vector<Leased> leased(8);
  const std::int64_t start_ns = swl::test::monotonicNs();
  const swl::test::Hammering run = swl::test::hammer(8, start_ns, start_ns + 600'000'000, true, [&](int thread) {
    const swl::Decision decision = limiter.tryAcquire("k");
    leased[static_cast<std::size_t>(thread)].decisions += decision.tier == swl::Tier::lease ? 1 : 0;
    return decision.allowed;
  });
  long from_leases = 0;
  for (const Leased& some : leased) from_leases += some.decisions;
  const long long calls = swl::test::commandCalls(connection, "evalsha");
  INFO(run.decisions << " decisions, " << from_leases << " from leases, " << run.admitted << " admitted, " << calls
                     << " Redis calls");
  CHECK(swl::test::mostInOneWindow(run.spans, 200'000'000) <= limit.max_requests);
  CHECK(from_leases > 0);
  CHECK(calls * 20 < run.decisions);
}

TEST_CASE("While Redis stalls, threads waiting on a key's lease call get its failure, and nothing hangs") {
  swl::test::RedisServer server;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), swl::PoolOptions{4}, swl::test::failFast(100ms));
  swl::LimiterOptions options;
  options.on_failure = swl::FailurePolicy::deny;
  LeasingLimiter limiter(pool, swl::Limit{1'000'000, 1s}, options, leaseFor(5ms));
  for (int i = 0; i < 1000; ++i) REQUIRE(limiter.tryAcquire("k").allowed);  // hot: leased
  server.pause();
  std::atomic<long> failed{0}, decided{0};
  std::vector<std::thread> threads;
  const auto started = std::chrono::steady_clock::now();
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (std::chrono::steady_clock::now() - started < 400ms) {
        const swl::Decision decision = limiter.tryAcquire("k");
        decided.fetch_add(1);
        failed.fetch_add(decision.tier == swl::Tier::fail_closed ? 1 : 0);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  server.resume();
  INFO(decided.load() << " decisions, " << failed.load() << " failed");
  CHECK(failed.load() > 0);
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  // Back: the connections that timed out are replaced, and Redis decides again.
  swl::Decision after;
  for (int i = 0; i < 50 && !after.allowed; ++i) after = limiter.tryAcquire("k");
  CHECK(after.allowed);
}
