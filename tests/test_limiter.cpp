// The limiter contract (swl/limiter.hpp), kept by every limiter: its shape, checked at compile time, and
// the promise that the observer sees every decision and every error exactly once, from the outermost
// limiter, whatever is inside it.

#include <swl/swl.hpp>

#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <typeinfo>
#include <vector>

using namespace std::chrono_literals;
using swl::test::RedisServer;

// Every limiter swl ships keeps the whole contract: checked here rather than in each header, where every
// file that includes swl would pay for instantiating them (0.3 s of each compile).
static_assert(swl::keepsLimiterContract<swl::SlidingWindowLimiter<>>());
static_assert(swl::keepsLimiterContract<swl::SlidingCounterLimiter<>>());
static_assert(swl::keepsLimiterContract<swl::FixedWindowLimiter<>>());
static_assert(swl::keepsLimiterContract<swl::GcraLimiter<swl::HashTagKey>>());
static_assert(swl::keepsLimiterContract<swl::BucketedWindowLimiter<>>());
static_assert(swl::keepsLimiterContract<swl::PeriodicLimiter<>>());
static_assert(swl::keepsLimiterContract<swl::LocalLimiter>());
static_assert(swl::keepsLimiterContract<swl::TieredLimiter<>>());
static_assert(swl::keepsLimiterContract<swl::TieredLimiter<swl::GcraLimiter<>>>());
static_assert(swl::keepsLimiterContract<swl::ShardedLimiter<>>());
static_assert(swl::keepsLimiterContract<swl::TieredLimiter<swl::ShardedLimiter<swl::FixedWindow>>>());
static_assert(swl::keepsLimiterContract<swl::LeasingLimiter<>>());
static_assert(!swl::isLimiter<swl::MultiLimiter<>>, "several limits, one decision: its own shape");
static_assert(!swl::isLimiter<swl::Connection>);

static_assert(swl::isAlgorithm<swl::SlidingWindowLog> && swl::isAlgorithm<swl::SlidingCounter> &&
              swl::isAlgorithm<swl::FixedWindow> && swl::isAlgorithm<swl::Gcra>);
static_assert(!swl::isAlgorithm<swl::PrefixKey>);
static_assert(swl::isKeyPolicy<swl::PrefixKey> && swl::isKeyPolicy<swl::HashTagKey> && swl::isKeyPolicy<swl::ShardKey>);
static_assert(!swl::isKeyPolicy<swl::Sharding>, "it changes the limit too: a ShardedLimiter takes it");
static_assert(swl::isMemberPolicy<swl::CompactMember> && swl::isMemberPolicy<swl::UuidMember> &&
              swl::isMemberPolicy<swl::TimestampMember>);
static_assert(swl::isTtlPolicy<swl::WindowTtl> && swl::isTtlPolicy<swl::WindowMultipleTtl> &&
              swl::isTtlPolicy<swl::FixedTtl>);

namespace {

// What an observer saw, copied out of the event (which is valid only during the call).
struct Seen {
  std::string key;
  std::string rule;
  std::int64_t cost = 0;
  swl::Verdict verdict = swl::Verdict::error;
  swl::Tier tier = swl::Tier::redis;
  bool has_decision = false;
  std::string error;  // the error's type, empty when there was none
};

class Recorder {
 public:
  swl::Observer observer() {
    return [this](const swl::DecisionEvent& event) {
      Seen seen{std::string(event.key),
                std::string(event.rule),
                event.cost,
                event.verdict,
                event.tier,
                event.decision != nullptr,
                ""};
      if (event.error != nullptr) seen.error = kindOf(*event.error);
      std::lock_guard<std::mutex> lock(mutex_);
      seen_.push_back(std::move(seen));
    };
  }

  std::vector<Seen> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(seen_, {});
  }

 private:
  static std::string kindOf(const swl::Error& error) {
    if (dynamic_cast<const swl::InvalidArgument*>(&error) != nullptr) return "invalid";
    if (dynamic_cast<const swl::ConnectionError*>(&error) != nullptr) return "connection";
    return "other";
  }

  std::mutex mutex_;
  std::vector<Seen> seen_;
};

// Each limiter kind, made the same way: a limit, and options carrying the observer and failure policy.
struct SlidingWindow {
  static constexpr swl::Tier kTier = swl::Tier::redis;
  static swl::SlidingWindowLimiter<> make(swl::RedisClient& redis, swl::Limit limit, swl::LimiterOptions options) {
    return swl::SlidingWindowLimiter<>(redis, limit, std::move(options));
  }
};
struct Gcra {
  static constexpr swl::Tier kTier = swl::Tier::redis;
  static swl::GcraLimiter<> make(swl::RedisClient& redis, swl::Limit limit, swl::LimiterOptions options) {
    return swl::GcraLimiter<>(redis, limit, std::move(options));
  }
};
struct Tiered {
  static constexpr swl::Tier kTier = swl::Tier::redis;
  static swl::TieredLimiter<> make(swl::RedisClient& redis, swl::Limit limit, swl::LimiterOptions options) {
    swl::TierOptions tiers;
    tiers.cache_refusals = false;  // every decision comes from Redis, so every test below applies alike
    return swl::TieredLimiter<>(redis, limit, std::move(options), tiers);
  }
};
struct Sharded {
  static constexpr swl::Tier kTier = swl::Tier::redis;
  static swl::ShardedLimiter<> make(swl::RedisClient& redis, swl::Limit limit, swl::LimiterOptions options) {
    return swl::ShardedLimiter<>(redis, limit, std::move(options), swl::Sharding(1));
  }
};

struct Leasing {
  static constexpr swl::Tier kTier = swl::Tier::redis;  // a key seen twice is not worth a lease
  static swl::LeasingLimiter<> make(swl::RedisClient& redis, swl::Limit limit, swl::LimiterOptions options) {
    return swl::LeasingLimiter<>(redis, limit, std::move(options));
  }
};

}  // namespace

TEMPLATE_TEST_CASE("every limiter reports each decision once: admitted, refused, and bad input as an error", "",
                   SlidingWindow, Gcra, Tiered, Sharded, Leasing) {
  RedisServer server;
  auto connection = server.connect();
  Recorder recorder;
  swl::LimiterOptions options;
  options.observer = recorder.observer();
  auto limiter = TestType::make(connection, swl::Limit{2, 60s}, options);

  CHECK(limiter.tryAcquire("a").allowed);
  CHECK(limiter.tryAcquire("a").allowed);
  CHECK_FALSE(limiter.tryAcquire("a").allowed);
  CHECK_THROWS_AS(limiter.tryAcquire(""), swl::InvalidArgument);
  const std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany({{"b"}, {"b", 3}, {"a"}});
  CHECK(outcomes[0].ok());
  CHECK_FALSE(outcomes[1].ok());
  CHECK(limiter.peek("a").used == 2);  // peeks and resets are not decisions: nothing reported
  CHECK(limiter.reset("b"));

  const std::vector<Seen> seen = recorder.take();
  REQUIRE(seen.size() == 7);
  CHECK(seen[0].verdict == swl::Verdict::allowed);
  CHECK(seen[0].key == "a");
  CHECK(seen[0].cost == 1);
  CHECK(seen[0].tier == TestType::kTier);
  CHECK(seen[0].has_decision);
  CHECK(seen[0].error.empty());
  CHECK(seen[2].verdict == swl::Verdict::rejected);
  CHECK(seen[3].verdict == swl::Verdict::error);
  CHECK(seen[3].error == "invalid");
  CHECK_FALSE(seen[3].has_decision);
  CHECK(seen[4].verdict == swl::Verdict::allowed);
  CHECK(seen[4].key == "b");
  CHECK(seen[5].verdict == swl::Verdict::error);
  CHECK(seen[5].cost == 3);
  CHECK(seen[5].error == "invalid");
  CHECK(seen[6].verdict == swl::Verdict::rejected);
}

TEMPLATE_TEST_CASE("when Redis cannot answer, every limiter reports the failure beside the policy's decision", "",
                   SlidingWindow, Gcra, Tiered, Sharded, Leasing) {
  auto nowhere = swl::Connection::tcp("127.0.0.1", RedisServer::freeLoopbackPort(), swl::test::failFast(200ms));
  Recorder recorder;
  swl::LimiterOptions options;
  options.observer = recorder.observer();
  options.on_failure = swl::FailurePolicy::allow;
  auto open = TestType::make(nowhere, swl::Limit{2, 60s}, options);
  CHECK(open.tryAcquire("k").tier == swl::Tier::fail_open);
  CHECK(open.tryAcquireMany({{"k"}})[0].decision.tier == swl::Tier::fail_open);

  options.on_failure = swl::FailurePolicy::throw_error;
  auto strict = TestType::make(nowhere, swl::Limit{2, 60s}, options);
  CHECK_THROWS_AS(strict.tryAcquire("k"), swl::ConnectionError);

  const std::vector<Seen> seen = recorder.take();
  REQUIRE(seen.size() == 3);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(seen[i].verdict == swl::Verdict::allowed);
    CHECK(seen[i].tier == swl::Tier::fail_open);
    CHECK(seen[i].error == "connection");
  }
  CHECK(seen[2].verdict == swl::Verdict::error);
  CHECK(seen[2].tier == swl::Tier::redis);
  CHECK(seen[2].error == "connection");
}

TEST_CASE("the in-memory limiter reports like the others, from its own tier") {
  Recorder recorder;
  swl::LocalLimiterOptions options;
  options.observer = recorder.observer();
  swl::LocalLimiter limiter(swl::Limit{1, 60s}, options);
  CHECK(limiter.tryAcquire("a").allowed);
  CHECK_FALSE(limiter.tryAcquireMany({{"a"}})[0].decision.allowed);
  CHECK_THROWS_AS(limiter.tryAcquire("a", 0), swl::InvalidArgument);
  const std::vector<Seen> seen = recorder.take();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].tier == swl::Tier::in_memory);
  CHECK(seen[1].verdict == swl::Verdict::rejected);
  CHECK(seen[2].error == "invalid");
  CHECK(seen[2].tier == swl::Tier::in_memory);
}

TEST_CASE("a tiered limiter reports its cached refusals once, and its Redis tier never reports on its own") {
  RedisServer server;
  auto connection = server.connect();
  Recorder recorder;
  swl::LimiterOptions options;
  options.observer = recorder.observer();
  swl::TieredLimiter<> limiter(connection, swl::Limit{1, 60s}, options);
  CHECK(limiter.tryAcquire("k").allowed);
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::redis);  // Redis refuses, and the refusal is cached
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::blocked_cache);
  const std::vector<swl::Outcome> batch = limiter.tryAcquireMany({{"k"}, {"other"}});
  CHECK(batch[0].decision.tier == swl::Tier::blocked_cache);
  CHECK(batch[1].decision.allowed);

  const std::vector<Seen> seen = recorder.take();
  REQUIRE(seen.size() == 5);
  CHECK(seen[2].tier == swl::Tier::blocked_cache);
  CHECK(seen[2].verdict == swl::Verdict::rejected);
  CHECK(seen[3].tier == swl::Tier::blocked_cache);
  CHECK(seen[4].key == "other");
}

TEST_CASE("a multi-limiter reports one event per decision, under the binding rule's key and name") {
  RedisServer server;
  auto connection = server.connect();
  Recorder recorder;
  swl::LimiterOptions options;
  options.observer = recorder.observer();
  swl::MultiLimiter<> limiter(connection, {{"user", swl::Limit{5, 60s}}, {"route", swl::Limit{1, 60s}}}, options);
  CHECK(limiter.tryAcquire({"u1", "GET /"}).decision.allowed);
  CHECK_FALSE(limiter.tryAcquire({"u1", "GET /"}).decision.allowed);
  CHECK_THROWS_AS(limiter.tryAcquire({"u1"}), swl::InvalidArgument);

  std::vector<Seen> seen = recorder.take();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].verdict == swl::Verdict::allowed);
  CHECK(seen[0].rule == "route");  // admitted: the rule with the least room binds
  CHECK(seen[0].key == "GET /");
  CHECK(seen[1].verdict == swl::Verdict::rejected);
  CHECK(seen[1].rule == "route");
  CHECK(seen[2].verdict == swl::Verdict::error);
  CHECK(seen[2].error == "invalid");

  server.stop();
  options.on_failure = swl::FailurePolicy::deny;
  auto nowhere = swl::Connection::tcp("127.0.0.1", server.port(), swl::test::failFast(200ms));
  swl::MultiLimiter<> denying(nowhere, {{"user", swl::Limit{5, 60s}}}, options);
  CHECK(denying.tryAcquire({"u1"}).decision.tier == swl::Tier::fail_closed);
  seen = recorder.take();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].verdict == swl::Verdict::rejected);
  CHECK(seen[0].tier == swl::Tier::fail_closed);
  CHECK(seen[0].error == "connection");
  CHECK(seen[0].rule == "user");
}

TEST_CASE("acquire takes a deadline as a time or as a duration, and gives up without sleeping in vain") {
  swl::testing::ManualClock clock;
  swl::LocalLimiterOptions options;
  options.clock = swl::Clock::manual(clock);
  swl::LocalLimiter limiter(swl::Limit{1, 60s}, options);
  CHECK(limiter.acquire("k", 1, 1s).allowed);
  const auto before = std::chrono::steady_clock::now();
  const swl::Decision refused = limiter.acquire("k", 1, std::chrono::steady_clock::now() + 1s);
  CHECK_FALSE(refused.allowed);  // the wait (60 s) would end after the deadline: refused at once
  CHECK(refused.retry_after == 60s);
  CHECK(std::chrono::steady_clock::now() - before < 500ms);
}

TEST_CASE("a message names a caller's key bounded and escaped: a 1 MB binary key makes a short, printable what()") {
  std::string key(1 << 20, 'x');
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<char>(i % 256);
  swl::LocalLimiter limiter(swl::Limit{10, 60s});
  try {
    limiter.tryAcquire(key, 0);
    FAIL("cost 0 was accepted");
  } catch (const swl::InvalidArgument& error) {
    const std::string message = error.what();
    CHECK(message.size() < 400);
    CHECK_THAT(message, Catch::Contains("cost 0 is not positive") && Catch::Contains("(1048576 bytes)"));
    CHECK_THAT(message, Catch::Contains("'\\x00\\x01\\x02"));
    for (const char c : message) CHECK((c >= 0x20 && c <= 0x7e));
  }
  CHECK_THROWS_WITH(swl::HashTagKey().key("}" + key), Catch::Contains("(1048577 bytes)"));
}

TEMPLATE_TEST_CASE(
    "in shadow mode every limiter admits what it would refuse, marks it, records nothing for it, and "
    "reports it as shadow_rejected",
    "", SlidingWindow, Gcra, Tiered, Sharded, Leasing) {
  RedisServer server;
  auto connection = server.connect();
  Recorder recorder;
  swl::LimiterOptions options;
  options.observer = recorder.observer();
  options.enforcement = swl::Enforcement::shadow;
  auto shadow = TestType::make(connection, swl::Limit{2, 60s}, options);

  CHECK(shadow.tryAcquire("a").allowed);
  CHECK(shadow.tryAcquire("a").allowed);
  const swl::Decision would_refuse = shadow.tryAcquire("a");
  CHECK(would_refuse.allowed);
  CHECK(would_refuse.shadow_rejected);
  CHECK(would_refuse.remaining == 0);
  CHECK(would_refuse.retry_after > 0us);  // the wait the refusal would have named
  const std::vector<swl::Outcome> batch = shadow.tryAcquireMany({{"a"}, {"b"}});
  CHECK(batch[0].decision.allowed);
  CHECK(batch[0].decision.shadow_rejected);
  CHECK_FALSE(batch[1].decision.shadow_rejected);
  CHECK(shadow.acquire("a", 1, 10ms).shadow_rejected);               // admitted at once: nothing to wait for
  CHECK_THROWS_AS(shadow.tryAcquire("a", 3), swl::InvalidArgument);  // bad input is still an error
  CHECK(shadow.peek("a").used == 2);                                 // the shadow refusals took nothing

  // Enforcing, the same window refuses for real.
  options.enforcement = swl::Enforcement::enforce;
  auto enforcing = TestType::make(connection, swl::Limit{2, 60s}, options);
  const swl::Decision refused = enforcing.tryAcquire("a");
  CHECK_FALSE(refused.allowed);
  CHECK_FALSE(refused.shadow_rejected);

  const std::vector<Seen> seen = recorder.take();
  REQUIRE(seen.size() == 8);
  CHECK(seen[1].verdict == swl::Verdict::allowed);
  CHECK(seen[2].verdict == swl::Verdict::shadow_rejected);
  CHECK(seen[3].verdict == swl::Verdict::shadow_rejected);
  CHECK(seen[4].verdict == swl::Verdict::allowed);
  CHECK(seen[5].verdict == swl::Verdict::shadow_rejected);
  CHECK(seen[6].verdict == swl::Verdict::error);
  CHECK(seen[7].verdict == swl::Verdict::rejected);
}

TEST_CASE("shadow mode admits a fail-closed answer as a shadow refusal, and still throws under throw_error") {
  auto nowhere = swl::Connection::tcp("127.0.0.1", RedisServer::freeLoopbackPort(), swl::test::failFast(200ms));
  swl::LimiterOptions options;
  options.enforcement = swl::Enforcement::shadow;
  options.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<> denying(nowhere, swl::Limit{2, 60s}, options);
  const swl::Decision decision = denying.tryAcquire("k");
  CHECK(decision.allowed);
  CHECK(decision.shadow_rejected);
  CHECK(decision.tier == swl::Tier::fail_closed);

  options.on_failure = swl::FailurePolicy::throw_error;
  swl::SlidingWindowLimiter<> strict(nowhere, swl::Limit{2, 60s}, options);
  CHECK_THROWS_AS(strict.tryAcquire("k"), swl::ConnectionError);
}

TEST_CASE("the in-memory and multi-limit limiters keep shadow mode too") {
  Recorder recorder;
  swl::LocalLimiterOptions local_options;
  local_options.observer = recorder.observer();
  local_options.enforcement = swl::Enforcement::shadow;
  swl::LocalLimiter local(swl::Limit{1, 60s}, local_options);
  CHECK_FALSE(local.tryAcquire("a").shadow_rejected);
  CHECK(local.tryAcquire("a").shadow_rejected);
  CHECK(local.peek("a").used == 1);

  RedisServer server;
  auto connection = server.connect();
  swl::LimiterOptions options;
  options.observer = recorder.observer();
  options.enforcement = swl::Enforcement::shadow;
  swl::MultiLimiter<> multi(connection, {{"user", swl::Limit{5, 60s}}, {"route", swl::Limit{1, 60s}}}, options);
  CHECK(multi.tryAcquire({"u1", "GET /"}).decision.allowed);
  const swl::MultiDecision second = multi.tryAcquire({"u1", "GET /"});
  CHECK(second);
  CHECK(second.decision.shadow_rejected);
  CHECK_FALSE(second.rules[1].allowed);  // each rule's own answer stays as the rule gave it
  CHECK(second.binding_name == "route");

  const std::vector<Seen> seen = recorder.take();
  REQUIRE(seen.size() == 4);
  CHECK(seen[1].verdict == swl::Verdict::shadow_rejected);
  CHECK(seen[1].tier == swl::Tier::in_memory);
  CHECK(seen[3].verdict == swl::Verdict::shadow_rejected);
  CHECK(seen[3].rule == "route");
}

namespace {

// A limiter of a user's own: the core of a count per key kept in memory, and a key "down" that fails as
// an unreachable store would. It supplies only what differs; swl::LimiterFace gives it the rest.
class CountingCore {
 public:
  CountingCore(swl::Limit limit, swl::Observer observer, swl::FailurePolicy on_failure, swl::Enforcement enforcement)
      : limit_(limit), observer_(std::move(observer)), on_failure_(on_failure), enforcement_(enforcement) {}

  swl::Decision decide(std::string_view key, std::int64_t cost, const swl::Limit& limit) {
    validate(key, cost, limit);
    if (key == "down") throw swl::ConnectionError("the store is down");
    std::int64_t& used = used_[std::string(key)];
    swl::Decision decision;
    decision.limit = limit.max_requests;
    decision.allowed = used + cost <= limit.max_requests;
    if (decision.allowed) used += cost;
    decision.remaining = limit.max_requests - used;
    if (!decision.allowed) decision.retry_after = 1ms;
    return decision;
  }
  std::vector<swl::Outcome> decideMany(const std::vector<swl::AcquireRequest>& requests) {
    return swl::detail::eachDecided(*this, requests);
  }
  swl::Usage peek(std::string_view key, const swl::Limit& limit) {
    swl::Usage usage;
    usage.limit = limit.max_requests;
    usage.used = used_[std::string(key)];
    return usage;
  }
  bool reset(std::string_view key) { return used_.erase(std::string(key)) > 0; }
  const swl::Limit& limit() const { return limit_; }
  void validate(std::string_view key, std::int64_t cost, const swl::Limit& limit) const {
    swl::detail::checkRequest("CountingLimiter", "tryAcquire", key, cost, limit.max_requests);
  }

 protected:
  swl::detail::Reporting reporting() const { return {observer_, on_failure_, swl::Tier::in_memory, enforcement_}; }

 private:
  swl::Limit limit_;
  swl::Observer observer_;
  swl::FailurePolicy on_failure_;
  swl::Enforcement enforcement_;
  std::map<std::string, std::int64_t> used_;
};

using CountingLimiter = swl::LimiterFace<CountingCore>;
static_assert(swl::keepsLimiterContract<CountingLimiter>());

}  // namespace

TEST_CASE("a limiter of one's own over LimiterFace keeps the whole contract: observer, failure policy, shadow") {
  Recorder recorder;
  CountingLimiter limiter(swl::Limit{2, 60s}, recorder.observer(), swl::FailurePolicy::allow,
                          swl::Enforcement::enforce);
  CHECK(limiter.tryAcquire("k"));
  CHECK(limiter.tryAcquire("k", 1, swl::Limit{3, 60s}).remaining == 1);  // its own limit is the default only
  CHECK_FALSE(limiter.tryAcquire("k"));
  const swl::Decision answered = limiter.tryAcquire("down");
  CHECK(answered.allowed);
  CHECK(answered.tier == swl::Tier::fail_open);
  CHECK_THROWS_AS(limiter.tryAcquire(""), swl::InvalidArgument);  // bad input stays an error under allow
  CHECK(limiter.peek("k").used == 2);
  CHECK(limiter.decide("other", 2).remaining == 0);
  CHECK_THROWS_AS(limiter.validate("k", 3), swl::InvalidArgument);
  CHECK_FALSE(limiter.acquire("k", 1, 5ms).allowed);  // each wait of 1 ms retried, then given up

  std::vector<Seen> seen = recorder.take();
  REQUIRE(seen.size() >= 6);  // five calls above, and acquire's tries
  CHECK(seen[0].verdict == swl::Verdict::allowed);
  CHECK(seen[2].verdict == swl::Verdict::rejected);
  CHECK(seen[3].tier == swl::Tier::fail_open);
  CHECK(seen[3].error == "connection");
  CHECK(seen[4].error == "invalid");
  CHECK(seen[4].tier == swl::Tier::in_memory);

  const std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany({{"fresh"}, {"down"}, {"", 1}});
  REQUIRE(outcomes.size() == 3);
  CHECK(outcomes[0].value().allowed);
  CHECK(outcomes[1].value().tier == swl::Tier::fail_open);
  CHECK_THROWS_AS(outcomes[2].value(), swl::InvalidArgument);
  seen = recorder.take();
  REQUIRE(seen.size() == 3);
  CHECK(seen[1].error == "connection");

  CountingLimiter shadowed(swl::Limit{1, 60s}, recorder.observer(), swl::FailurePolicy::throw_error,
                           swl::Enforcement::shadow);
  CHECK_FALSE(shadowed.tryAcquire("k").shadow_rejected);
  const swl::Decision refused = shadowed.tryAcquire("k");
  CHECK(refused.allowed);
  CHECK(refused.shadow_rejected);
  CHECK_THROWS_AS(shadowed.tryAcquire("down"), swl::ConnectionError);
  seen = recorder.take();
  REQUIRE(seen.size() == 3);
  CHECK(seen[1].verdict == swl::Verdict::shadow_rejected);
  CHECK(seen[2].verdict == swl::Verdict::error);
}
