// The access list (access_list.hpp): allowed keys admitted untouched, denied keys refused, both without a
// round trip, for every limiter that keeps the contract and for MultiLimiter; batches split around them;
// the lists changed from many threads while others decide.

#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::commandCalls;
using swl::test::RedisServer;

namespace {

const swl::Limit kLimit{3, 60s};

// Lists every test starts from: internal callers allowed by prefix, one abuser denied by name.
std::shared_ptr<swl::AccessList> usualLists() {
  auto access = std::make_shared<swl::AccessList>();
  access->allowPrefix("internal:");
  access->deny("abuser");
  return access;
}

template <class Limiter>
void checkListedAnswers(Limiter& limiter) {
  for (int i = 0; i < 10; ++i) {  // far past the limit: nothing is counted
    const swl::Decision allowed = limiter.tryAcquire("internal:health");
    CHECK(allowed.allowed);
    CHECK(allowed.tier == swl::Tier::allow_list);
    CHECK(allowed.remaining == kLimit.max_requests);
    CHECK(allowed.limit == kLimit.max_requests);
  }
  const swl::Decision denied = limiter.tryAcquire("abuser");
  CHECK_FALSE(denied.allowed);
  CHECK(denied.tier == swl::Tier::deny_list);
  CHECK(denied.remaining == 0);
  CHECK(denied.retry_after == kLimit.window);  // the operator lifts a denial, not time
}

template <class Limiter>
int admittedOf(Limiter& limiter, const std::string& key, int calls) {
  int admitted = 0;
  for (int i = 0; i < calls; ++i) admitted += limiter.tryAcquire(key).allowed ? 1 : 0;
  return admitted;
}

}  // namespace

TEST_CASE("a key is found by name or by any prefix, whatever prefixes of other lengths are listed") {
  swl::AccessList access;
  CHECK(access.listingOf("anything") == swl::Listing::unlisted);
  access.allowPrefix("a");
  access.allowPrefix("aa");
  access.allowPrefix("abc:");
  access.deny("b");
  CHECK(access.listingOf("ab") == swl::Listing::allowed);  // "aa" sorts nearest, "a" matches
  CHECK(access.listingOf("a") == swl::Listing::allowed);
  CHECK(access.listingOf("b") == swl::Listing::denied);
  CHECK(access.listingOf("bb") == swl::Listing::unlisted);  // a denied key is not a prefix
  CHECK(access.listingOf("") == swl::Listing::unlisted);
  access.unlistPrefix("a");
  CHECK(access.listingOf("ab") == swl::Listing::unlisted);
  CHECK(access.listingOf("aab") == swl::Listing::allowed);
  access.clear();
  CHECK(access.listingOf("aab") == swl::Listing::unlisted);
}

TEST_CASE("a key or prefix listed twice is listed once: one unlist takes it off, and keys around it stay") {
  swl::AccessList access;
  for (const char* key : {"m", "c", "x", "m", "a", "m"}) access.allow(key);
  access.denyPrefix("p:");
  access.denyPrefix("p:");
  access.unlist("m");
  access.unlistPrefix("p:");
  CHECK(access.listingOf("m") == swl::Listing::unlisted);
  CHECK(access.listingOf("p:1") == swl::Listing::unlisted);
  for (const char* key : {"a", "c", "x"}) CHECK(access.listingOf(key) == swl::Listing::allowed);
  CHECK(access.listingOf("b") == swl::Listing::unlisted);
  access.unlist("never listed");  // leaves the rest alone
  CHECK(access.listingOf("x") == swl::Listing::allowed);
}

TEST_CASE("a key denied by name under an allowed prefix is denied, and once unlisted it is limited again") {
  auto access = usualLists();
  access->deny("internal:leaked-token");
  swl::LocalLimiterOptions options;
  options.access = access;
  swl::LocalLimiter limiter(kLimit, options);
  CHECK(limiter.tryAcquire("internal:leaked-token").tier == swl::Tier::deny_list);
  access->unlist("internal:leaked-token");
  CHECK(limiter.tryAcquire("internal:leaked-token").tier == swl::Tier::allow_list);
  access->unlistPrefix("internal:");
  CHECK(admittedOf(limiter, "internal:leaked-token", 5) == 3);
  CHECK(limiter.tryAcquire("internal:leaked-token").tier == swl::Tier::in_memory);
}

TEMPLATE_TEST_CASE("every algorithm answers listed keys without a round trip, and limits the others as usual", "",
                   swl::SlidingWindowLimiter<>, swl::SlidingCounterLimiter<>, swl::FixedWindowLimiter<>,
                   swl::GcraLimiter<>, swl::BucketedWindowLimiter<>) {
  RedisServer server;
  auto connection = server.connect();
  swl::LimiterOptions options;
  options.access = usualLists();
  TestType limiter(connection, kLimit, options);
  checkListedAnswers(limiter);
  auto observer = server.connect();
  CHECK(commandCalls(observer, "evalsha") == 0);
  CHECK(limiter.peek("internal:health").used == 0);  // peek reads what was counted: nothing
  CHECK(admittedOf(limiter, "user:1", 5) == 3);
}

TEST_CASE("the composites answer listed keys too, before any of their tiers") {
  RedisServer server;
  auto connection = server.connect();
  swl::LimiterOptions options;
  options.access = usualLists();
  auto observer = server.connect();

  SECTION("in memory") {
    swl::LocalLimiterOptions local;
    local.access = options.access;
    swl::LocalLimiter limiter(kLimit, local);
    checkListedAnswers(limiter);
  }
  SECTION("sharded") {
    swl::ShardedLimiter<> limiter(connection, swl::Limit{6, 60s}, options, swl::Sharding(3));
    CHECK(limiter.tryAcquire("internal:x").tier == swl::Tier::allow_list);
    CHECK(limiter.tryAcquire("abuser").tier == swl::Tier::deny_list);
  }
  SECTION("tiered") {
    swl::TierOptions tiers;
    tiers.instances = 2;
    swl::TieredLimiter<> limiter(connection, kLimit, options, tiers);
    checkListedAnswers(limiter);
  }
  SECTION("leasing") {
    swl::LeasingLimiter<> limiter(connection, kLimit, options);
    checkListedAnswers(limiter);
  }
  CHECK(commandCalls(observer, "evalsha") == 0);
}

TEST_CASE("a MultiLimiter call is refused if a rule's key is denied, else admitted untouched if one is allowed") {
  RedisServer server;
  auto connection = server.connect();
  swl::LimiterOptions options;
  options.access = usualLists();
  swl::MultiLimiter<> limiter(connection, {{"user", kLimit}, {"ip", swl::Limit{10, 1s}}}, options);
  const swl::MultiDecision allowed = limiter.tryAcquire({"internal:job", "ip:10.0.0.1"});
  CHECK(allowed.decision.allowed);
  CHECK(allowed.decision.tier == swl::Tier::allow_list);
  CHECK(allowed.binding_name == "user");
  CHECK(allowed.rules.at(1).remaining == 10);
  const swl::MultiDecision denied = limiter.tryAcquire({"internal:job", "abuser"});
  CHECK_FALSE(denied.decision.allowed);
  CHECK(denied.decision.tier == swl::Tier::deny_list);
  CHECK(denied.binding_name == "ip");
  CHECK(denied.decision.retry_after == 1s);  // the binding rule's window
  auto observer = server.connect();
  CHECK(commandCalls(observer, "evalsha") == 0);
  CHECK(limiter.tryAcquire({"user:1", "ip:10.0.0.1"}).decision.tier == swl::Tier::redis);
  CHECK_THROWS_AS(limiter.tryAcquire({"internal:job"}), swl::InvalidArgument);  // one key for two rules
}

TEST_CASE("a batch: listed requests are answered in place, the rest decided in one batch, in input order") {
  RedisServer server;
  auto connection = server.connect();
  swl::LimiterOptions options;
  options.access = usualLists();
  std::vector<swl::Tier> observed;
  options.observer = [&](const swl::DecisionEvent& event) { observed.push_back(event.tier); };
  swl::SlidingWindowLimiter<> limiter(connection, kLimit, options);
  auto observer = server.connect();
  REQUIRE(limiter.tryAcquire("warm").allowed);  // the script is loaded: each call below is one EVALSHA
  observed.clear();
  const long long calls_before = commandCalls(observer, "evalsha");
  const std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany(
      {{"user:1"}, {"internal:a"}, {"abuser"}, {"user:1", 2}, {"internal:b", 0}, {"user:1"}, {"abuser", 9}});
  REQUIRE(outcomes.size() == 7);
  CHECK(outcomes[0].value().tier == swl::Tier::redis);
  CHECK(outcomes[0].value().allowed);
  CHECK(outcomes[1].value().tier == swl::Tier::allow_list);
  CHECK(outcomes[2].value().tier == swl::Tier::deny_list);
  CHECK(outcomes[3].value().allowed);                                                 // 1 + 2 of 3
  CHECK_THROWS_WITH(outcomes[4].value(), Catch::Contains("cost 0 is not positive"));  // listed, still checked
  CHECK_FALSE(outcomes[5].value().allowed);
  CHECK_THROWS_AS(outcomes[6].value(), swl::InvalidArgument);    // 9 exceeds the limit of 3
  CHECK(commandCalls(observer, "evalsha") == calls_before + 3);  // only the unlisted requests
  CHECK(observed.size() == 7);                                   // each request reported once
  CHECK(observed[1] == swl::Tier::allow_list);
  CHECK(observed[2] == swl::Tier::deny_list);
}

TEST_CASE("a listed key reaches the observer under its own tier, and a denied one is only marked in shadow mode") {
  auto access = usualLists();
  swl::LocalLimiterOptions options;
  options.access = access;
  options.enforcement = swl::Enforcement::shadow;
  std::vector<swl::DecisionEvent> events;
  options.observer = [&](const swl::DecisionEvent& event) { events.push_back(event); };
  swl::LocalLimiter limiter(kLimit, options);
  const swl::Decision denied = limiter.tryAcquire("abuser");
  CHECK(denied.allowed);
  CHECK(denied.shadow_rejected);
  CHECK(denied.tier == swl::Tier::deny_list);
  limiter.tryAcquire("internal:x");
  REQUIRE(events.size() == 2);
  CHECK(events[0].verdict == swl::Verdict::shadow_rejected);
  CHECK(events[0].tier == swl::Tier::deny_list);
  CHECK(events[1].verdict == swl::Verdict::allowed);
  CHECK(events[1].tier == swl::Tier::allow_list);
  CHECK(swl::toString(swl::Tier::allow_list) == "allow_list");
  CHECK(swl::toString(swl::Tier::deny_list) == "deny_list");
}

TEST_CASE("8 threads change the lists while 8 threads decide: every answer is one the lists could give") {
  auto access = std::make_shared<swl::AccessList>();
  swl::LocalLimiterOptions options;
  options.access = access;
  swl::LocalLimiter limiter(swl::Limit{1'000'000, 60s}, options);
  std::atomic<bool> stop{false};
  std::atomic<long> wrong{0}, listed{0}, changes{0};
  // On a loaded machine the deciders could finish before a changer is first scheduled: they go on until
  // the lists have changed often and some answer came from them (or a minute passed, which fails below).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  const auto overlapped = [&] {
    return (changes >= 3'000 && listed > 0) || std::chrono::steady_clock::now() > deadline;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const std::string key = "key:" + std::to_string(t);
      for (int i = 0; !stop; ++i, ++changes) {
        if (i % 3 == 0) access->allow(key);
        if (i % 3 == 1) access->denyPrefix("key:");
        if (i % 3 == 2) {
          access->unlist(key);
          access->unlistPrefix("key:");
        }
      }
    });
    threads.emplace_back([&, t] {
      const std::string key = "key:" + std::to_string((t + 1) % 8);
      for (int i = 0; i < 20'000 || !overlapped(); ++i) {
        const swl::Decision decision = limiter.tryAcquire(key);
        const bool possible = (decision.tier == swl::Tier::allow_list && decision.allowed) ||
                              (decision.tier == swl::Tier::deny_list && !decision.allowed) ||
                              (decision.tier == swl::Tier::in_memory && decision.allowed);
        wrong += possible ? 0 : 1;
        listed += decision.tier == swl::Tier::in_memory ? 0 : 1;
      }
    });
  }
  for (std::size_t i = 1; i < threads.size(); i += 2) threads[i].join();
  stop = true;
  for (std::size_t i = 0; i < threads.size(); i += 2) threads[i].join();
  CHECK(wrong == 0);
  CHECK(listed > 0);
  CHECK(changes >= 3'000);
}

TEST_CASE("bad input to the lists, and limiters that cannot take them, are InvalidArguments that say why") {
  swl::AccessList access;
  CHECK_THROWS_WITH(access.allow(""), Catch::Contains("AccessList::allow: the key is empty"));
  CHECK_THROWS_WITH(access.denyPrefix(""), Catch::Contains("prefix is empty (it would match every key)"));
  CHECK_THROWS_AS(access.unlist(""), swl::InvalidArgument);

  RedisServer server;
  auto connection = server.connect();
  swl::LimiterOptions options;
  options.access = usualLists();
  CHECK_THROWS_WITH((swl::ConcurrencyLimiter<>(connection, swl::Concurrency{2, 10s}, options)),
                    Catch::Contains("LimiterOptions::access is not taken here"));
  swl::SlidingWindowLimiter<> limiter(connection, kLimit, options);
  CHECK_THROWS_WITH(limiter.tryAcquire("", 1), Catch::Contains("the key is empty"));
  CHECK_THROWS_WITH(limiter.tryAcquire("internal:x", 4), Catch::Contains("exceeds the limit of 3"));
  swl::LimiterOptions lenient = options;
  lenient.on_failure = swl::FailurePolicy::allow;
  swl::SlidingWindowLimiter<> failing_open(connection, kLimit, lenient);
  CHECK_THROWS_AS(failing_open.tryAcquire("abuser", 0), swl::InvalidArgument);  // never answered for bad input
}
