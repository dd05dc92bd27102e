// ConcurrencyLimiter: at most N slots per key held at once. With a manual clock where expiry matters
// (release, extend, a holder that stops, retry_after), and on Redis's clock where processes and threads
// race (client-side spans of every holding; a holder killed with its slots in hand). Always a real
// redis-server, or a real cluster.

#include <swl/swl.hpp>

#include "support/admission_spans.hpp"
#include "support/child_process.hpp"
#include "support/manual_time.hpp"
#include "support/redis_cluster.hpp"
#include "support/replies.hpp"
#include "support/workers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::ManualTime;

namespace {

using Limiter = swl::ConcurrencyLimiter<>;
using Slot = Limiter::Slot;

std::int64_t nanosecondsOf(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
}

}  // namespace

TEST_CASE("a key admits max_in_flight slots, refuses the next, and counts what is held") {
  ManualTime time;
  Limiter limiter(time.connection, swl::Concurrency{3, 1s}, time.options);
  std::vector<Slot> slots;
  for (int i = 0; i < 3; ++i) {
    Slot slot = limiter.tryAcquire("k");
    REQUIRE(slot);
    CHECK(slot.decision().tier == swl::Tier::redis);
    CHECK(slot.decision().remaining == 2 - i);
    CHECK(slot.decision().reset_after == 1s);
    slots.push_back(std::move(slot));
  }
  const Slot refused = limiter.tryAcquire("k");
  CHECK_FALSE(refused);
  CHECK_FALSE(refused.held());
  CHECK(refused.decision().remaining == 0);
  CHECK(limiter.inFlight("k") == 3);
  CHECK(limiter.inFlight("other") == 0);
  CHECK(limiter.tryAcquire("other"));  // keys do not share slots
}

TEST_CASE("release frees a slot at once, and a second release finds nothing") {
  ManualTime time;
  Limiter limiter(time.connection, swl::Concurrency{1, 1s}, time.options);
  Slot slot = limiter.tryAcquire("k");
  REQUIRE(slot);
  CHECK_FALSE(limiter.tryAcquire("k"));
  CHECK(slot.release());
  CHECK_FALSE(slot.held());
  CHECK_FALSE(slot.release());
  CHECK(limiter.inFlight("k") == 0);
  CHECK(limiter.tryAcquire("k"));
}

TEST_CASE("a Slot releases when destroyed: a moved-from one releases nothing, a moved-onto one its old slot") {
  ManualTime time;
  Limiter limiter(time.connection, swl::Concurrency{2, 1s}, time.options);
  {
    const Slot slot = limiter.tryAcquire("k");
    REQUIRE(slot);
    CHECK(limiter.inFlight("k") == 1);
  }
  CHECK(limiter.inFlight("k") == 0);

  Slot first = limiter.tryAcquire("k");
  Slot moved = std::move(first);
  CHECK_FALSE(first.held());     // NOLINT(bugprone-use-after-move): the point of the test
  CHECK_FALSE(first.release());  // NOLINT(bugprone-use-after-move)
  CHECK(limiter.inFlight("k") == 1);
  moved = limiter.tryAcquire("k");  // the slot it held is released, the new one kept
  CHECK(limiter.inFlight("k") == 1);
  CHECK(moved.release());
  CHECK(limiter.inFlight("k") == 0);
}

TEST_CASE("a holder that stops calling loses its slot at its expiry, and learns it when it comes back") {
  ManualTime time;
  Limiter limiter(time.connection, swl::Concurrency{2, 1s}, time.options);
  Slot first = limiter.tryAcquire("k");
  Slot second = limiter.tryAcquire("k");
  REQUIRE((first && second));
  time.clock.advance(1s - 1us);
  CHECK_FALSE(limiter.tryAcquire("k"));
  time.clock.advance(1us);
  CHECK(limiter.inFlight("k") == 0);
  CHECK(limiter.tryAcquire("k"));
  CHECK_FALSE(first.extend());
  CHECK_FALSE(second.release());
}

TEST_CASE("extend keeps a slot past its first expiry: after its expiry it is lost and no longer counted") {
  ManualTime time;
  Limiter limiter(time.connection, swl::Concurrency{1, 1s}, time.options);
  Slot slot = limiter.tryAcquire("k");
  REQUIRE(slot);
  time.clock.advance(800ms);
  CHECK(slot.extend());       // until now + slot_ttl
  time.clock.advance(800ms);  // 1.6 s after it was taken
  CHECK(limiter.inFlight("k") == 1);
  const Slot refused = limiter.tryAcquire("k");
  CHECK_FALSE(refused);
  CHECK(refused.decision().reset_after == 200ms);
  CHECK(slot.extend(300ms));
  time.clock.advance(300ms);
  CHECK_FALSE(slot.extend());
  CHECK_FALSE(slot.held());
  CHECK(swl::test::integerReply(time.connection, {"ZCARD", limiter.redisKey("k")}) == 0);
  CHECK(limiter.inFlight("k") == 0);
  CHECK(limiter.tryAcquire("k"));
}

TEST_CASE("extend takes 1 us..slot_ttl, and a Slot holding nothing extends nothing") {
  ManualTime time;
  Limiter limiter(time.connection, swl::Concurrency{1, 1s}, time.options);
  Slot slot = limiter.tryAcquire("k");
  CHECK_THROWS_WITH(slot.extend(0us), Catch::Contains("0 us is not in 1 us..slot_ttl"));
  CHECK_THROWS_WITH(slot.extend(1s + 1us), Catch::Contains("is not in 1 us..slot_ttl"));
  CHECK(slot.held());  // a refused extend leaves the slot as it was
  CHECK(slot.extend(1s));
  Slot empty;
  CHECK_FALSE(empty);
  CHECK_FALSE(empty.extend());
  CHECK_FALSE(empty.release());
}

TEST_CASE("a refusal asks back when the earliest slot expires, or after 100 ms, whichever is sooner") {
  ManualTime time;
  Limiter short_slots(time.connection, swl::Concurrency{2, 50ms}, time.options);
  const Slot first = short_slots.tryAcquire("short");
  time.clock.advance(10ms);
  const Slot second = short_slots.tryAcquire("short");
  time.clock.advance(20ms);
  const Slot refused = short_slots.tryAcquire("short");
  CHECK_FALSE(refused);
  CHECK(refused.decision().retry_after == 20ms);
  CHECK(refused.decision().reset_after == 30ms);

  Limiter long_slots(time.connection, swl::Concurrency{1, 30s}, time.options);
  const Slot held = long_slots.tryAcquire("long");
  time.clock.advance(29'999'990us);
  const Slot capped = long_slots.tryAcquire("long");
  CHECK(capped.decision().retry_after == 10us);
  time.clock.set(time.clock.now() - 29s);
  CHECK(long_slots.tryAcquire("long").decision().retry_after == Limiter::kLongestRetryAfter);
}

TEST_CASE("acquire waits for a slot released by another thread, and gives up before a deadline it cannot meet") {
  swl::test::RedisServer server;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), swl::PoolOptions{2}, swl::test::patient());
  Limiter limiter(pool, swl::Concurrency{1, 10s});
  Slot held = limiter.tryAcquire("k");
  REQUIRE(held);

  const auto started = std::chrono::steady_clock::now();
  const Slot hopeless = limiter.acquire("k", 50ms);  // its first refusal asks back after 100 ms
  CHECK_FALSE(hopeless);
  CHECK(std::chrono::steady_clock::now() - started < 50ms);

  std::thread releaser([&] {
    std::this_thread::sleep_for(150ms);
    held.release();
  });
  const Slot waited = limiter.acquire("k", 3s);
  const auto waited_for = std::chrono::steady_clock::now() - started;
  releaser.join();
  CHECK(waited);
  CHECK(waited_for >= 150ms);
  CHECK(waited_for < 150ms + Limiter::kLongestRetryAfter + 200ms);
}

TEST_CASE("the key expires with its latest slot, and reset forgets every slot") {
  ManualTime time;
  Limiter limiter(time.connection, swl::Concurrency{2, 1500ms}, time.options);
  Slot slot = limiter.tryAcquire("k");
  const long long pttl = swl::test::integerReply(time.connection, {"PTTL", limiter.redisKey("k")});
  CHECK(pttl > 1400);
  CHECK(pttl <= 1500);
  CHECK(limiter.reset("k"));
  CHECK_FALSE(limiter.reset("k"));
  CHECK(limiter.inFlight("k") == 0);
  CHECK_FALSE(slot.release());
}

TEST_CASE("threads sharing a pool never hold more than max_in_flight at once, and use every slot") {
  swl::test::RedisServer server;
  auto pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), swl::PoolOptions{8}, swl::test::patient());
  const std::int64_t max_in_flight = 3;
  Limiter limiter(pool, swl::Concurrency{max_in_flight, 5s});
  std::vector<std::vector<swl::test::Span>> spans(8);
  std::atomic<long> lost{0};
  const std::int64_t start_ns = swl::test::monotonicNs();
  const swl::test::Hammering run =
      swl::test::hammer(8, start_ns, start_ns + nanosecondsOf(500ms), false, [&](int thread) {
        Slot slot = limiter.tryAcquire("k");
        if (!slot) return false;
        const std::int64_t acquired = swl::test::monotonicNs();  // after the reply
        std::this_thread::sleep_for(300us);
        spans[static_cast<std::size_t>(thread)].push_back({acquired, swl::test::monotonicNs()});  // before release
        if (!slot.release()) lost.fetch_add(1);
        return true;
      });
  std::vector<swl::test::Span> all;
  for (const auto& some : spans) all.insert(all.end(), some.begin(), some.end());
  const std::int64_t most = swl::test::mostAtOnce(all);
  INFO(run.decisions << " decisions, " << run.admitted << " admitted; at most " << most << " held at once");
  CHECK(most <= max_in_flight);
  CHECK(most == max_in_flight);
  CHECK(run.decisions > run.admitted);
  CHECK(lost.load() == 0);
  CHECK(limiter.inFlight("k") == 0);
}

TEST_CASE("processes sharing one key never hold more than max_in_flight at once (client-side spans)") {
  swl::test::RedisServer server;
  const std::string worker = swl::test::workerProgram("SWL_SLOT_WORKER");
  const std::int64_t max_in_flight = 4;
  const std::int64_t start_ns = swl::test::monotonicNs() + nanosecondsOf(300ms);  // all start together
  const std::vector<std::string> arguments{worker,
                                           std::to_string(server.port()),
                                           "k",
                                           std::to_string(max_in_flight),
                                           "5000",
                                           "3",
                                           std::to_string(start_ns),
                                           "800",
                                           "500"};
  int idle_workers = 0;
  const std::vector<swl::test::Span> spans =
      swl::test::spansOfWorkers({arguments, arguments, arguments}, &idle_workers);
  CHECK(idle_workers == 0);
  const std::int64_t most = swl::test::mostAtOnce(spans);
  INFO(spans.size() << " slots held in all; at most " << most << " at once");
  CHECK(most <= max_in_flight);
  CHECK(most == max_in_flight);
}

TEST_CASE(
    "a holder killed with its slots in hand: they are held until slot_ttl after it took them, then free "
    "themselves") {
  swl::test::RedisServer server;
  swl::Connection connection = server.connect();
  // Redis's clock is this host's. The holder takes its slots on it after `started` and before `held`, so
  // they expire in [started + 1 s, held + 1 s]: a manual clock started from it checks both ends exactly.
  const std::chrono::microseconds started = swl::Clock::system().now();
  swl::test::ChildProcess holder;
  swl::test::startHolding(holder, {swl::test::workerProgram("SWL_SLOT_WORKER"), std::to_string(server.port()), "k", "2",
                                   "1000", "hold", "2"});
  const std::chrono::microseconds held = swl::Clock::system().now();
  holder.kill();

  swl::testing::ManualClock clock(started + 1s - 1us);
  swl::LimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  Limiter limiter(connection, swl::Concurrency{2, 1s}, options);
  const Slot refused = limiter.tryAcquire("k");  // nobody released them, and neither has expired
  CHECK_FALSE(refused);
  CHECK(refused.decision().retry_after <= Limiter::kLongestRetryAfter);
  clock.set(held + 1s);
  const Slot first = limiter.tryAcquire("k");
  const Slot second = limiter.tryAcquire("k");
  CHECK(first);
  CHECK(second);
  CHECK_FALSE(limiter.tryAcquire("k"));
}

TEST_CASE("with Redis down, each failure policy answers, the observer sees each acquire once") {
  const int closed_port = swl::test::RedisServer::freeLoopbackPort();
  auto nowhere = swl::Connection::tcp("127.0.0.1", closed_port, swl::test::failFast(200ms));
  std::mutex mutex;
  std::vector<swl::Verdict> seen;
  swl::LimiterOptions options;
  options.observer = [&](const swl::DecisionEvent& event) {
    const std::lock_guard<std::mutex> lock(mutex);
    seen.push_back(event.verdict);
    CHECK(event.key == "k");
    CHECK(event.cost == 1);
  };

  SECTION("allow: an admitted Slot that holds nothing") {
    options.on_failure = swl::FailurePolicy::allow;
    Limiter limiter(nowhere, swl::Concurrency{2, 1s}, options);
    Slot slot = limiter.tryAcquire("k");
    CHECK(slot);
    CHECK(slot.decision().tier == swl::Tier::fail_open);
    CHECK_FALSE(slot.held());
    CHECK_FALSE(slot.extend());
    CHECK_FALSE(slot.release());
    CHECK(seen == std::vector<swl::Verdict>{swl::Verdict::allowed});
  }
  SECTION("deny: refused, fail_closed") {
    options.on_failure = swl::FailurePolicy::deny;
    Limiter limiter(nowhere, swl::Concurrency{2, 1s}, options);
    const Slot slot = limiter.tryAcquire("k");
    CHECK_FALSE(slot);
    CHECK(slot.decision().tier == swl::Tier::fail_closed);
    CHECK(slot.decision().retry_after > 0us);
    CHECK(seen == std::vector<swl::Verdict>{swl::Verdict::rejected});
  }
  SECTION("throw_error: the ConnectionError") {
    Limiter limiter(nowhere, swl::Concurrency{2, 1s}, options);
    CHECK_THROWS_AS(limiter.tryAcquire("k"), swl::ConnectionError);
    CHECK_THROWS_AS(limiter.inFlight("k"), swl::ConnectionError);
    CHECK(seen == std::vector<swl::Verdict>{swl::Verdict::error});
  }
}

TEST_CASE("bad input is refused with InvalidArgument naming the problem, whatever the failure policy") {
  ManualTime time;
  CHECK_THROWS_WITH(Limiter(time.connection, swl::Concurrency{0, 1s}), Catch::Contains("max_in_flight 0 is not in"));
  CHECK_THROWS_WITH(Limiter(time.connection, swl::Concurrency{-3, 1s}), Catch::Contains("max_in_flight -3 is not in"));
  CHECK_THROWS_WITH(Limiter(time.connection, swl::Concurrency{1, 0us}), Catch::Contains("slot_ttl of 0 us"));
  CHECK_THROWS_WITH(Limiter(time.connection, swl::Concurrency{1, -1s}), Catch::Contains("slot_ttl of"));
  time.options.on_failure = swl::FailurePolicy::allow;
  Limiter limiter(time.connection, swl::Concurrency{1, 1s}, time.options);
  CHECK_THROWS_WITH(limiter.tryAcquire(""), Catch::Contains("the key is empty"));
  CHECK_THROWS_AS(limiter.acquire("", 1s), swl::InvalidArgument);
  CHECK_THROWS_WITH(limiter.inFlight(""), Catch::Contains("inFlight: the key is empty"));
  CHECK_THROWS_WITH(limiter.reset(""), Catch::Contains("reset: the key is empty"));
}

TEST_CASE("on a Redis Cluster, each key's slots live on its master and are limited there") {
  swl::test::RedisCluster cluster;
  swl::ClusterOptions options;
  options.connection = swl::test::patient();
  auto client = swl::ClusterConnection::tcp(cluster.seeds(), options);
  Limiter limiter(client, swl::Concurrency{2, 5s});
  std::vector<std::string> keys;
  std::vector<int> masters;
  for (int i = 0; masters.size() < 3 && i < 1000; ++i) {
    const std::string key = "user:" + std::to_string(i);
    const int master = cluster.masterOf(swl::hashSlot(limiter.redisKey(key)));
    if (std::find(masters.begin(), masters.end(), master) == masters.end()) {
      masters.push_back(master);
      keys.push_back(key);
    }
  }
  REQUIRE(keys.size() == 3);
  for (const std::string& key : keys) {
    Slot first = limiter.tryAcquire(key);
    Slot second = limiter.tryAcquire(key);
    CHECK((first && second));
    CHECK_FALSE(limiter.tryAcquire(key));
    CHECK(limiter.inFlight(key) == 2);
    CHECK(first.extend());
    CHECK(first.release());
    CHECK(limiter.tryAcquire(key));
  }
}

TEST_CASE(
    "a concurrency given per call judges the key's held slots by it: lowered, it admits nothing until enough "
    "are released") {
  ManualTime time;
  Limiter limiter(time.connection, swl::Concurrency{4, 1s}, time.options);
  const swl::Concurrency pro{6, 2s};
  std::vector<Slot> slots;
  for (int i = 0; i < 6; ++i) slots.push_back(limiter.tryAcquire("k", pro));
  for (const Slot& slot : slots) REQUIRE(slot);
  const Slot refused = limiter.tryAcquire("k", pro);
  CHECK_FALSE(refused);
  CHECK(refused.decision().limit == 6);
  CHECK(slots[0].decision().reset_after == 2s);  // its slot_ttl, not the limiter's
  CHECK_FALSE(limiter.tryAcquire("k"));          // under its own 4, six held are too many
  for (int i = 0; i < 3; ++i) CHECK(slots[i].release());
  CHECK(limiter.tryAcquire("k"));  // three held: a fourth fits
  CHECK(slots[5].extend(2s));      // extends up to the slot_ttl it was taken under
  CHECK_THROWS_WITH(limiter.tryAcquire("k", swl::Concurrency{0, 1s}), Catch::Contains("max_in_flight 0"));
}

TEST_CASE("in shadow mode a concurrency limiter admits past max_in_flight, marks it, and holds nothing for it") {
  ManualTime time;
  swl::LimiterOptions options = time.options;
  options.enforcement = swl::Enforcement::shadow;
  Limiter limiter(time.connection, swl::Concurrency{1, 1s}, options);
  const Slot first = limiter.tryAcquire("k");
  REQUIRE(first);
  CHECK(first.held());
  const Slot second = limiter.tryAcquire("k");
  CHECK(second);
  CHECK(second.decision().shadow_rejected);
  CHECK_FALSE(second.held());
  CHECK(limiter.inFlight("k") == 1);
}
