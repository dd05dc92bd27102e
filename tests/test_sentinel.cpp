#include <swl/algorithms/sliding_window.hpp>
#include <swl/redis/sentinel_connection.hpp>

#include "support/planned_failover.hpp"
#include "support/redis_sentinel.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::endpoint;
using swl::test::errorReplies;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::RedisSentinel;
using swl::test::textReply;

namespace {

const std::string kMaster(RedisSentinel::kMasterName);

swl::SentinelConnection sentinelClient(const RedisSentinel& deployment, const swl::SentinelOptions& options) {
  return swl::SentinelConnection(deployment.sentinels(), kMaster, options);
}

swl::SentinelConnection sentinelClient(const RedisSentinel& deployment) {
  return sentinelClient(deployment, deployment.options());
}

// A thread that calls tryAcquire on one key until stopped, keeping every decision and when it came.
class RecordingTraffic {
 public:
  template <class Limiter>
  RecordingTraffic(Limiter& limiter, std::string key) {
    thread_ = std::thread([this, &limiter, key = std::move(key)] {
      while (!stop_) {
        const swl::Decision decision = limiter.tryAcquire(key);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          decisions_.push_back({std::chrono::steady_clock::now(), decision.tier, decision.allowed});
        }
        // Failed calls return at once (reconnects are throttled): do not let them spin a core.
        std::this_thread::sleep_for(1ms);
      }
    });
  }
  ~RecordingTraffic() { stop(); }

  struct Seen {
    std::chrono::steady_clock::time_point at;
    swl::Tier tier;
    bool allowed;
  };

  // Waits until `done(decisions so far)` holds, or `patience` has passed; says which.
  template <class Done>
  bool waitUntil(Done&& done, std::chrono::milliseconds patience) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (done(decisions_)) return true;
      }
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

  std::size_t decided() {
    std::lock_guard<std::mutex> lock(mutex_);
    return decisions_.size();
  }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  // After stop().
  const std::vector<Seen>& decisions() const { return decisions_; }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<Seen> decisions_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("the master the sentinels name serves a limiter exactly, from one thread or eight") {
  RedisSentinel deployment;
  auto redis = sentinelClient(deployment);
  CHECK(redis.masterAddress() == endpoint(deployment.firstMasterPort()));

  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{5, 3600s});
  for (int i = 0; i < 5; ++i) {
    const swl::Decision decision = limiter.tryAcquire("alone");
    CHECK(decision.allowed);
    CHECK(decision.tier == swl::Tier::redis);
  }
  CHECK_FALSE(limiter.tryAcquire("alone").allowed);

  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  swl::SlidingWindowLimiter<> shared_limiter(redis, swl::Limit{100, 3600s});
  for (int thread = 0; thread < 8; ++thread) {
    threads.emplace_back([&] {
      for (int call = 0; call < 100; ++call) admitted += shared_limiter.tryAcquire("shared").allowed ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(admitted == 100);

  const std::vector<swl::Outcome> batch = limiter.tryAcquireMany({{"batch"}, {"batch", 3}, {"batch"}, {"batch"}});
  CHECK(batch[0].value().allowed);
  CHECK(batch[1].value().allowed);
  CHECK(batch[2].value().allowed);
  CHECK_FALSE(batch[3].value().allowed);

  auto master = deployment.connectToNode(deployment.firstMasterPort());
  CHECK(logEntries(master, limiter.redisKey("alone")) == 5);
  CHECK(logEntries(master, limiter.redisKey("shared")) == 100);
  CHECK(logEntries(master, limiter.redisKey("batch")) == 3);  // 1 + 3 + 1 units in three entries
  CHECK(limiter.peek("batch").used == 5);

  // A master that forgot the script (a restart, SCRIPT FLUSH): the call loads it and goes once more.
  CHECK(textReply(master, {"SCRIPT", "FLUSH"}) == "OK");
  CHECK_FALSE(limiter.tryAcquire("alone").allowed);
  CHECK(limiter.tryAcquire("after flush").allowed);
  CHECK(logEntries(master, limiter.redisKey("after flush")) == 1);

  // Sentinels that do not know the master are each named, and the failure policy answers.
  swl::SentinelConnection unknown(deployment.sentinels(), "othermaster", deployment.options());
  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  swl::SlidingWindowLimiter<> lenient(unknown, swl::Limit{5, 3600s}, fail_open);
  CHECK(lenient.tryAcquire("k").tier == swl::Tier::fail_open);
  try {
    unknown.masterAddress();
    FAIL("a master that no sentinel knows was found");
  } catch (const swl::ConnectionError& error) {
    CHECK_THAT(error.what(), Catch::Contains("named the master 'othermaster'"));
    for (const swl::Address& sentinel : deployment.sentinels()) {
      CHECK_THAT(error.what(), Catch::Contains("sentinel " + endpoint(sentinel.port) + " does not know it"));
    }
  }

  // A sentinel that is down is skipped.
  std::vector<swl::Address> first_one_down = deployment.sentinels();
  first_one_down.insert(first_one_down.begin(), {"127.0.0.1", swl::test::RedisServer::freeLoopbackPort()});
  swl::SentinelConnection partly_down(first_one_down, kMaster, deployment.options());
  CHECK(partly_down.masterAddress() == endpoint(deployment.firstMasterPort()));
}

TEST_CASE("passwords reach the sentinels and the data nodes, and a wrong one is an AuthError that never shows it") {
  const std::string data_password = "data-secret-7", sentinel_password = "sentinel-secret-9";
  RedisSentinel deployment(data_password, sentinel_password);
  const auto shows_no_password = [&](const std::string& message) {
    for (const std::string& password : {data_password, sentinel_password, std::string("wrong-password-3")}) {
      if (message.find(password) != std::string::npos) return false;
    }
    return true;
  };
  const auto auth_error_of = [&](const swl::SentinelOptions& options) -> std::string {
    auto redis = sentinelClient(deployment, options);
    swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{5, 3600s});
    try {
      limiter.tryAcquire("k");
    } catch (const swl::AuthError& error) {
      return error.what();
    }
    return "no AuthError";
  };

  auto redis = sentinelClient(deployment);
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{5, 3600s});
  CHECK(limiter.tryAcquire("k").tier == swl::Tier::redis);

  swl::SentinelOptions wrong_sentinel_password = deployment.options();
  wrong_sentinel_password.sentinel.password = "wrong-password-3";
  const std::string refused_by_sentinels = auth_error_of(wrong_sentinel_password);
  CHECK_THAT(refused_by_sentinels, Catch::Contains("none of the sentinels") && Catch::Contains("'mymaster'") &&
                                       Catch::Contains("refused authentication"));
  CHECK(shows_no_password(refused_by_sentinels));

  swl::SentinelOptions no_sentinel_password = deployment.options();
  no_sentinel_password.sentinel.password.clear();
  CHECK_THAT(auth_error_of(no_sentinel_password), Catch::Contains("requires a password"));

  swl::SentinelOptions wrong_data_password = deployment.options();
  wrong_data_password.master.password = "wrong-password-3";
  const std::string refused_by_master = auth_error_of(wrong_data_password);
  CHECK_THAT(refused_by_master, Catch::Contains("master 'mymaster'") && Catch::Contains("refused authentication"));
  CHECK(shows_no_password(refused_by_master));
}

TEST_CASE("bad sentinel input is refused with a named reason, and unreachable sentinels are named") {
  const swl::Address somewhere{"127.0.0.1", 26379};
  CHECK_THROWS_WITH(swl::SentinelConnection({}, "mymaster"), Catch::Contains("no sentinel given"));
  CHECK_THROWS_WITH(swl::SentinelConnection({somewhere}, ""), Catch::Contains("the master name is empty"));
  CHECK_THROWS_WITH(swl::SentinelConnection({somewhere, {"127.0.0.1", 0}}, "mymaster"),
                    Catch::Contains("port 0 is not in 1..65535"));
  CHECK_THROWS_WITH(swl::SentinelConnection({{"", 26379}}, "mymaster"), Catch::Contains("host is empty"));
  swl::SentinelOptions sentinel_db;
  sentinel_db.sentinel.db = 2;
  CHECK_THROWS_WITH(swl::SentinelConnection({somewhere}, "mymaster", sentinel_db),
                    Catch::Contains("sentinels have no databases"));
  swl::SentinelOptions empty_pool;
  empty_pool.pool.size = 0;
  CHECK_THROWS_AS(swl::SentinelConnection({somewhere}, "mymaster", empty_pool), swl::InvalidArgument);

  const int first_closed = swl::test::RedisServer::freeLoopbackPort();
  const int second_closed = swl::test::RedisServer::freeLoopbackPort();
  swl::SentinelOptions with_passwords;
  with_passwords.sentinel.password = "sentinel-secret-5";
  with_passwords.master.password = "data-secret-6";
  swl::SentinelConnection nowhere({{"127.0.0.1", first_closed}, {"127.0.0.1", second_closed}}, "mymaster",
                                  with_passwords);
  swl::SlidingWindowLimiter<> limiter(nowhere, swl::Limit{5, 3600s});
  try {
    limiter.tryAcquire("k");
    FAIL("no error from unreachable sentinels");
  } catch (const swl::ConnectionError& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Catch::Contains("none of the sentinels " + endpoint(first_closed) + ", " +
                                        endpoint(second_closed) + " named the master 'mymaster'") &&
                            Catch::Contains("Connection refused"));
    CHECK(message.find("secret") == std::string::npos);
  }
}

TEST_CASE("a killed master: the failure policy answers until the sentinels promote its replica, which then decides") {
  RedisSentinel deployment;
  swl::SentinelOptions options = deployment.options();
  for (swl::ConnectionOptions* connection : {&options.sentinel, &options.master}) {
    connection->connect_timeout = 300ms;
    connection->command_timeout = 300ms;
  }
  auto redis = sentinelClient(deployment, options);
  swl::LimiterOptions fail_closed;
  fail_closed.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{1'000'000, 3600s}, fail_closed);
  const int old_master = deployment.firstMasterPort(), replica = deployment.firstReplicaPort();

  RecordingTraffic traffic(limiter, "k");
  REQUIRE(traffic.waitUntil([](const auto& decisions) { return decisions.size() >= 100; }, 5000ms));
  const auto killed_at = std::chrono::steady_clock::now();
  deployment.node(old_master).kill();
  const auto resumed = [](const std::vector<RecordingTraffic::Seen>& decisions) {
    bool refused = false;
    for (const RecordingTraffic::Seen& seen : decisions) {
      refused = refused || seen.tier == swl::Tier::fail_closed;
      if (refused && seen.tier == swl::Tier::redis) return true;
    }
    return false;
  };
  REQUIRE(traffic.waitUntil(resumed, 15000ms));
  const auto resumed_at = std::chrono::steady_clock::now();
  // Some more decisions on the new master, so that none of the last ones could be a straggler.
  const std::size_t decided_by_then = traffic.decided();
  REQUIRE(traffic.waitUntil([&](const auto& decisions) { return decisions.size() >= decided_by_then + 100; }, 5000ms));
  traffic.stop();

  long long before_kill = 0, refused = 0, after_failover = 0;
  for (const RecordingTraffic::Seen& seen : traffic.decisions()) {
    if (seen.tier == swl::Tier::fail_closed) {
      CHECK_FALSE(seen.allowed);
      ++refused;
    } else {
      REQUIRE(seen.tier == swl::Tier::redis);
      CHECK(seen.allowed);
      ++(refused == 0 ? before_kill : after_failover);
    }
  }
  const std::vector<RecordingTraffic::Seen>& decisions = traffic.decisions();
  for (std::size_t i = decisions.size() - 100; i < decisions.size(); ++i) {
    CHECK(decisions[i].tier == swl::Tier::redis);
  }
  CHECK(refused > 0);
  WARN("killed master: " << before_kill << " decisions before, " << refused << " by the failure policy, "
                         << after_failover << " by the promoted replica, which took over after "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(resumed_at - killed_at).count()
                         << " ms");
  deployment.waitUntilMasterIs(replica, 15s);  // the leader announced it first; the others follow
  CHECK(redis.masterAddress() == endpoint(replica));
  // Entries admitted before the kill reached the replica or were lost with the master; every one
  // admitted since is on the promoted replica.
  auto promoted = deployment.connectToNode(replica);
  const long long recorded = logEntries(promoted, limiter.redisKey("k"));
  CHECK(recorded >= after_failover);
  CHECK(recorded <= after_failover + before_kill + 1);  // + a call that ran but whose answer died with the master
}

TEST_CASE(
    "a graceful sentinel failover: the demoted master answers READONLY, and the call goes once to the new master") {
  RedisSentinel deployment;
  const int old_master = deployment.firstMasterPort(), replica = deployment.firstReplicaPort();
  // Not listening to the announcements, which would keep the calls off the old master altogether.
  swl::SentinelOptions deaf = deployment.options();
  deaf.follow_announcements = false;
  auto redis = sentinelClient(deployment, deaf);
  auto batch_redis = sentinelClient(deployment, deaf);
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{5, 3600s});
  swl::SlidingWindowLimiter<> batch_limiter(batch_redis, swl::Limit{5, 3600s});
  for (int i = 0; i < 3; ++i) REQUIRE(limiter.tryAcquire("single").allowed);
  REQUIRE(batch_limiter.tryAcquireMany({{"batch"}})[0].value().allowed);
  deployment.waitUntilReplicated(old_master);

  auto sentinel = deployment.connectToSentinel(0);
  REQUIRE(textReply(sentinel, {"SENTINEL", "FAILOVER", kMaster}) == "OK");
  deployment.waitUntilMasterIs(replica, 15s);
  // Sentinel demotes the old master only seconds after the switch, and closes its clients as it does
  // (the killed-master case covers that). Demoting it by hand now keeps our connections to it open, so
  // that they meet READONLY.
  auto demoted = deployment.connectToNode(old_master);
  REQUIRE(textReply(demoted, {"REPLICAOF", "127.0.0.1", std::to_string(replica)}) == "OK");

  for (int i = 0; i < 2; ++i) {
    const swl::Decision decision = limiter.tryAcquire("single");
    CHECK(decision.allowed);
    CHECK(decision.tier == swl::Tier::redis);
  }
  CHECK_FALSE(limiter.tryAcquire("single").allowed);
  const std::vector<swl::Outcome> batch = batch_limiter.tryAcquireMany({{"batch"}, {"batch"}, {"batch"}});
  for (const swl::Outcome& outcome : batch) {
    CHECK(outcome.value().allowed);
    CHECK(outcome.value().tier == swl::Tier::redis);
  }

  // One READONLY for the single call, one per call of the batch, each call repeated once elsewhere.
  CHECK(errorReplies(demoted, "READONLY") == 1 + 3);
  CHECK(redis.masterAddress() == endpoint(replica));
  auto promoted = deployment.connectToNode(replica);
  CHECK(logEntries(promoted, limiter.redisKey("single")) == 5);
  CHECK(logEntries(promoted, batch_limiter.redisKey("batch")) == 4);
}

TEST_CASE(
    "a planned failover under load: the announcements keep every call off the old master, so the window "
    "stays within 10% of its limit and almost nothing is lost") {
  RedisSentinel deployment;
  const swl::test::FailoverResult result = swl::test::runPlannedFailover(deployment, deployment.options());
  WARN("planned failover, announcements followed: "
       << result.admitted << " admitted, at most " << result.most_in_a_window << " in one window of limit "
       << result.limit << "; " << result.lost << " of " << result.checked << " recent admissions lost; "
       << result.refused_by_policy << " answered by the policy");
  CHECK(result.checked > 100);
  CHECK(result.overAdmitted() <= result.limit / 10);
  CHECK(result.lost <= result.limit / 10);
}

TEST_CASE("with replica_acks, a planned failover under load loses nothing that was acknowledged") {
  RedisSentinel deployment;
  swl::SentinelOptions options = deployment.options();
  options.master.replica_acks = 1;
  const swl::test::FailoverResult result = swl::test::runPlannedFailover(deployment, options);
  WARN("planned failover, replica_acks 1: " << result.admitted << " admitted, at most " << result.most_in_a_window
                                            << " in one window of limit " << result.limit << "; " << result.lost
                                            << " of " << result.checked << " recent admissions lost; "
                                            << result.refused_by_policy << " answered by the policy");
  CHECK(result.checked > 0);
  CHECK(result.lost == 0);
  CHECK(result.overAdmitted() == 0);
}
