#include <swl/swl.hpp>

#include "support/redis_cluster.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::commandCalls;
using swl::test::endpoint;
using swl::test::errorReplies;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::RedisCluster;
using swl::test::textReply;

namespace {

// Patient options unless a test sets its own: these tests are about following the cluster, and a loaded
// machine must not turn a redirection's pause into a timeout.
swl::ClusterOptions patientCluster() {
  swl::ClusterOptions options;
  options.connection = swl::test::patient();
  options.connection.command_timeout = 1000ms;
  return options;
}

swl::ClusterConnection clusterClient(const RedisCluster& cluster, swl::ClusterOptions options = patientCluster()) {
  options.pool.size = 8;
  options.pool.borrow_timeout = 5000ms;
  return swl::ClusterConnection::tcp(cluster.seeds(), std::move(options));
}

// One user key per master: "user:0", "user:1", ... until every master serves one.
template <class Limiter>
std::map<int, std::string> keyPerMaster(RedisCluster& cluster, const Limiter& limiter) {
  std::map<int, std::string> keys;
  for (int i = 0; keys.size() < RedisCluster::kMasters; ++i) {
    const std::string key = "user:" + std::to_string(i);
    keys.emplace(cluster.masterOf(swl::hashSlot(limiter.redisKey(key))), key);
  }
  return keys;
}

// Threads that call tryAcquire on `keys` round after round until stopped, counting what each key was
// admitted and every error that reached them.
class CountingTraffic {
 public:
  template <class Limiter>
  CountingTraffic(Limiter& limiter, std::vector<std::string> keys, int threads) : keys_(std::move(keys)) {
    for (std::size_t i = 0; i < keys_.size(); ++i) admitted_.emplace_back(0);
    for (int thread = 0; thread < threads; ++thread) {
      threads_.emplace_back([this, &limiter] {
        while (!stop_) {
          for (std::size_t i = 0; i < keys_.size(); ++i) {
            try {
              if (limiter.tryAcquire(keys_[i]).allowed) ++admitted_[i];
              ++decisions_;
            } catch (const swl::Error& error) {
              std::lock_guard<std::mutex> lock(mutex_);
              errors_.push_back(error.what());
            }
          }
        }
      });
    }
  }
  ~CountingTraffic() { stop(); }

  // Lets the traffic run until at least `more` further decisions were made.
  void runFor(long long more) {
    const long long until = decisions_ + more;
    while (decisions_ < until) std::this_thread::sleep_for(1ms);
  }

  void stop() {
    stop_ = true;
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

  long long admitted(std::size_t key) const { return admitted_[key]; }
  std::vector<std::string> errors() {
    std::lock_guard<std::mutex> lock(mutex_);
    return errors_;
  }

 private:
  std::vector<std::string> keys_;
  std::deque<std::atomic<long long>> admitted_;
  std::atomic<long long> decisions_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::string> errors_;
  std::vector<std::thread> threads_;
};

}  // namespace

TEST_CASE("a limiter over the cluster reaches every master, and 8 threads admit exactly the limit per key") {
  RedisCluster cluster;
  auto redis = clusterClient(cluster);
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{100, 60s});
  const std::map<int, std::string> keys = keyPerMaster(cluster, limiter);

  std::map<std::string, std::atomic<int>> admitted;
  for (const auto& [master, key] : keys) admitted[key] = 0;
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 8; ++thread) {
    threads.emplace_back([&] {
      for (int round = 0; round < 300; ++round) {
        for (const auto& [master, key] : keys) admitted[key] += limiter.tryAcquire(key).allowed ? 1 : 0;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::vector<std::string> masters = redis.masters();
  std::sort(masters.begin(), masters.end());
  std::vector<std::string> expected;
  for (const auto& [master, key] : keys) expected.push_back(endpoint(master));
  CHECK(masters == expected);
  for (const auto& [master, key] : keys) {
    CHECK(admitted[key] == 100);
    CHECK(redis.masterOf(limiter.redisKey(key)) == endpoint(master));
    auto owner = cluster.connect(master);
    CHECK(logEntries(owner, limiter.redisKey(key)) == 100);
    CHECK(commandCalls(owner, "evalsha") > 0);
    CHECK(commandCalls(owner, "eval") == 0);
  }

  // Every master forgets the script: each loads it again by itself, and the counts hold.
  for (const auto& [master, key] : keys) {
    auto owner = cluster.connect(master);
    CHECK(textReply(owner, {"SCRIPT", "FLUSH"}) == "OK");
  }
  for (const auto& [master, key] : keys) {
    const swl::Decision decision = limiter.tryAcquire(key);
    CHECK_FALSE(decision.allowed);
    CHECK(decision.tier == swl::Tier::redis);
  }
}

TEST_CASE("a batch over the cluster is decided in input order, with keys of every master and every key policy") {
  RedisCluster cluster;
  auto redis = clusterClient(cluster);
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{2, 60s});
  const std::map<int, std::string> keys = keyPerMaster(cluster, limiter);

  std::vector<swl::AcquireRequest> requests;
  for (int round = 0; round < 3; ++round) {
    for (const auto& [master, key] : keys) requests.push_back({key, 1});
  }
  requests.push_back({"", 1});  // invalid: spoils only its own outcome
  const std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany(requests);
  REQUIRE(outcomes.size() == requests.size());
  for (std::size_t i = 0; i + 1 < outcomes.size(); ++i) {
    const int round = static_cast<int>(i / keys.size());
    REQUIRE(outcomes[i].ok());
    CHECK(outcomes[i].decision.allowed == (round < 2));
    CHECK(outcomes[i].decision.remaining == std::max(0, 1 - round));
  }
  CHECK_THROWS_AS(outcomes.back().value(), swl::InvalidArgument);

  // Hash tags keep one user's keys of several limiters on one master, whatever their prefixes.
  swl::SlidingWindowLimiter<swl::HashTagKey> per_second(redis, swl::Limit{3, 1s}, {}, swl::HashTagKey("second"));
  swl::SlidingWindowLimiter<swl::HashTagKey> per_hour(redis, swl::Limit{5, 3600s}, {}, swl::HashTagKey("hour"));
  CHECK(redis.masterOf(per_second.redisKey("user:42")) == redis.masterOf(per_hour.redisKey("user:42")));
  int admitted_per_second = 0, admitted_per_hour = 0;
  for (int i = 0; i < 10; ++i) {
    admitted_per_second += per_second.tryAcquire("user:42").allowed ? 1 : 0;
    admitted_per_hour += per_hour.tryAcquire("user:42").allowed ? 1 : 0;
  }
  CHECK(admitted_per_second == 3);
  CHECK(admitted_per_hour == 5);

  // Several limits in one decision need one slot: a shared hash tag gives it. Keys in two slots are
  // refused before anything is sent, even under a failure policy that would otherwise admit.
  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  swl::MultiLimiter<swl::HashTagKey> layered(redis, {{"second", swl::Limit{3, 1s}}, {"hour", swl::Limit{5, 3600s}}},
                                             fail_open);
  int admitted_layered = 0;
  for (int i = 0; i < 10; ++i) admitted_layered += layered.tryAcquire({"user:7", "user:7"}) ? 1 : 0;
  CHECK(admitted_layered == 3);
  REQUIRE(swl::hashSlot(layered.redisKey(0, "user:7")) != swl::hashSlot(layered.redisKey(1, "user:8")));
  CHECK_THROWS_WITH(layered.tryAcquire({"user:7", "user:8"}), Catch::Contains("different hash slots"));
}

TEST_CASE("a slot migrated mid-traffic costs the callers nothing: ASK and MOVED are followed, no entry is lost") {
  RedisCluster cluster;
  auto redis = clusterClient(cluster);
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{1'000'000, 3600s});
  // Four keys in one slot (the tag "hot"), so the slot is half moved for a while.
  const std::vector<std::string> keys{"{hot}:0", "{hot}:1", "{hot}:2", "{hot}:3"};
  const std::uint16_t slot = swl::hashSlot("hot");
  REQUIRE(swl::hashSlot(limiter.redisKey(keys[0])) == slot);
  const int source_port = cluster.masterOf(slot);
  int target_port = 0;
  for (int master : cluster.masterPorts()) {
    if (master != source_port) target_port = master;
  }
  const std::string source_id = cluster.nodeId(source_port), target_id = cluster.nodeId(target_port);
  auto source = cluster.connect(source_port);
  auto target = cluster.connect(target_port);
  for (const std::string& key : keys) REQUIRE(limiter.tryAcquire(key).allowed);

  CountingTraffic traffic(limiter, keys, 4);
  traffic.runFor(200);
  // What redis-cli --cluster reshard does for one slot.
  CHECK(textReply(target, {"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", source_id}) == "OK");
  CHECK(textReply(source, {"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", target_id}) == "OK");
  for (const std::string& key : keys) {
    const std::string redis_key = limiter.redisKey(key);
    CHECK(textReply(source,
                    {"MIGRATE", "127.0.0.1", std::to_string(target_port), "", "0", "5000", "KEYS", redis_key}) == "OK");
    REQUIRE(limiter.tryAcquire(key).allowed);  // the key has left the source: ASK
    traffic.runFor(100);
  }
  // The source learns the new owner 20 ms before the target does (redis-cli tells the target first, but
  // other tools and gossip need not): meanwhile the two send calls back and forth with MOVED, which
  // callers must not see.
  CHECK(textReply(source, {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", target_id}) == "OK");
  std::this_thread::sleep_for(20ms);
  for (int master : cluster.masterPorts()) {
    auto node = cluster.connect(master);
    CHECK(textReply(node, {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", target_id}) == "OK");
  }
  traffic.runFor(300);  // the source now answers MOVED
  traffic.stop();

  CHECK(traffic.errors() == std::vector<std::string>{});
  CHECK(errorReplies(source, "ASK") > 0);
  CHECK(errorReplies(source, "MOVED") > 0);
  CHECK(commandCalls(target, "asking") > 0);
  CHECK(redis.masterOf(limiter.redisKey(keys[0])) == endpoint(target_port));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    // Every admitted request is in the window on the new owner: the one before the traffic, the
    // synchronous one during the move, and the traffic's.
    CHECK(logEntries(target, limiter.redisKey(keys[i])) == traffic.admitted(i) + 2);
  }
  CHECK(integerReply(source, {"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) == 0);
}

TEST_CASE("two masters that send a slot back and forth: the call gives up within the command timeout, then is served") {
  RedisCluster cluster;
  swl::ClusterOptions options = patientCluster();
  options.connection.command_timeout = 300ms;
  auto redis = clusterClient(cluster, options);
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{10, 60s});  // FailurePolicy::throw_error
  const std::string key = "never-written";
  const std::uint16_t slot = swl::hashSlot(limiter.redisKey(key));
  const int source_port = cluster.masterOf(slot);
  int target_port = 0;
  for (int master : cluster.masterPorts()) {
    if (master != source_port) target_port = master;
  }
  // Only the source hands the (empty) slot over; the target still thinks it is the source's.
  auto source = cluster.connect(source_port);
  CHECK(textReply(source, {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", cluster.nodeId(target_port)}) == "OK");

  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(limiter.tryAcquire(key), swl::ReplyError);
  CHECK_THROWS_WITH(limiter.tryAcquire(key), Catch::Contains("still redirected after") &&
                                                 Catch::Contains("on hash slot " + std::to_string(slot)));
  const auto per_call = (std::chrono::steady_clock::now() - started) / 2;
  CHECK(per_call >= 100ms);         // it waited for the masters to agree...
  CHECK(per_call < 300ms + 200ms);  // ...but not past the command timeout
  CHECK(errorReplies(source, "MOVED") > 0);

  for (int master : {target_port, source_port}) {
    auto node = cluster.connect(master);
    CHECK(textReply(node, {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", cluster.nodeId(target_port)}) == "OK");
  }
  const swl::Decision decision = limiter.tryAcquire(key);
  CHECK(decision.allowed);
  CHECK(decision.tier == swl::Tier::redis);
  CHECK(redis.masterOf(limiter.redisKey(key)) == endpoint(target_port));
}

TEST_CASE("a manual failover mid-traffic is followed without errors, and the limit stays exact") {
  RedisCluster cluster;
  swl::ClusterOptions options = patientCluster();
  options.connection.command_timeout = 5000ms;  // a master pauses writes while its replica catches up
  auto redis = clusterClient(cluster, options);
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{300, 3600s});
  const std::map<int, std::string> per_master = keyPerMaster(cluster, limiter);
  std::vector<std::string> keys;
  for (const auto& [master, key] : per_master) keys.push_back(key);
  const int old_master = per_master.begin()->first;
  const int replica = cluster.replicaOf(old_master);

  CountingTraffic traffic(limiter, keys, 4);
  traffic.runFor(300);
  auto promoted = cluster.connect(replica);
  // A manual failover that cannot finish in cluster-manual-failover-timeout (5 s; a loaded CI machine
  // can stall the replica's catch-up) is abandoned by Redis: ask again, as an operator would.
  const auto give_up_at = std::chrono::steady_clock::now() + 40s;
  auto ask_again_at = std::chrono::steady_clock::now();
  while (cluster.masterOf(swl::hashSlot(limiter.redisKey(keys[0]))) != replica) {
    REQUIRE(std::chrono::steady_clock::now() < give_up_at);
    if (std::chrono::steady_clock::now() >= ask_again_at) {
      CHECK(textReply(promoted, {"CLUSTER", "FAILOVER"}) == "OK");
      ask_again_at = std::chrono::steady_clock::now() + 7s;
    }
    std::this_thread::sleep_for(10ms);
  }
  cluster.waitUntilHealthy();
  traffic.runFor(3000);  // enough to exhaust every key's limit after the failover
  traffic.stop();

  CHECK(traffic.errors() == std::vector<std::string>{});
  auto demoted = cluster.connect(old_master);
  CHECK(errorReplies(demoted, "MOVED") > 0);
  CHECK(redis.masterOf(limiter.redisKey(keys[0])) == endpoint(replica));
  for (std::size_t i = 0; i < keys.size(); ++i) CHECK(traffic.admitted(i) == 300);
  CHECK(logEntries(promoted, limiter.redisKey(keys[0])) == 300);
}

TEST_CASE("a killed master: the failure policy answers while its slots are down, then its replica takes over") {
  RedisCluster cluster;
  swl::ClusterOptions options;
  options.connection.connect_timeout = 300ms;
  options.connection.command_timeout = 300ms;
  auto redis = clusterClient(cluster, options);
  swl::LimiterOptions fail_closed;
  fail_closed.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{1'000'000, 3600s}, fail_closed);
  const std::map<int, std::string> keys = keyPerMaster(cluster, limiter);
  const auto& [master, key] = *keys.begin();
  const auto& [survivor, survivor_key] = *std::next(keys.begin());
  const int replica = cluster.replicaOf(master);
  REQUIRE(limiter.tryAcquire(key).tier == swl::Tier::redis);
  auto replica_view = cluster.connect(replica);
  CHECK(textReply(replica_view, {"READONLY"}) == "OK");
  while (logEntries(replica_view, limiter.redisKey(key)) != 1) std::this_thread::sleep_for(1ms);

  cluster.node(master).kill();
  bool failure_policy_answered = false, resumed = false;
  const auto give_up_at = std::chrono::steady_clock::now() + 30s;
  while (!resumed && std::chrono::steady_clock::now() < give_up_at) {
    const swl::Decision decision = limiter.tryAcquire(key);
    if (decision.tier == swl::Tier::fail_closed) {
      CHECK_FALSE(decision.allowed);
      failure_policy_answered = true;
    }
    resumed = failure_policy_answered && decision.tier == swl::Tier::redis;
    // Until a replica takes over, the whole cluster refuses writes (cluster-require-full-coverage):
    // a surviving master's keys are asked again, briefly, then meet the failure policy too.
    limiter.tryAcquire(survivor_key);
    std::this_thread::sleep_for(20ms);
  }
  CHECK(failure_policy_answered);
  REQUIRE(resumed);
  auto surviving_master = cluster.connect(survivor);
  CHECK(errorReplies(surviving_master, "CLUSTERDOWN") > 0);
  CHECK(limiter.tryAcquire(survivor_key).tier == swl::Tier::redis);
  CHECK(redis.masterOf(limiter.redisKey(key)) == endpoint(replica));
  auto promoted = cluster.connect(replica);
  // The entry admitted before the kill was replicated; the ones admitted since landed on the replica.
  CHECK(logEntries(promoted, limiter.redisKey(key)) >= 2);
}

TEST_CASE("a hot key sharded over the cluster spreads over masters, never exceeds the limit, and errs little") {
  RedisCluster cluster;
  auto redis = clusterClient(cluster);
  constexpr int kLimit = 1000, kShards = 4;
  swl::ShardedLimiter<> limiter(redis, swl::Limit{kLimit, 3600s}, {}, swl::Sharding(kShards));
  std::set<std::uint16_t> slots;
  std::set<std::string> masters;
  for (std::size_t shard = 0; shard < kShards; ++shard) {
    slots.insert(swl::hashSlot(limiter.redisKey("hot", shard)));
    masters.insert(redis.masterOf(limiter.redisKey("hot", shard)));
  }
  CHECK(slots.size() == kShards);
  CHECK(masters.size() >= 2);

  // Exactly the limit's worth of requests: shards filled unevenly turn a few away early.
  int admitted = 0;
  for (int i = 0; i < kLimit; ++i) admitted += limiter.tryAcquire("hot").allowed ? 1 : 0;
  const double shortfall = 1.0 - static_cast<double>(admitted) / kLimit;
  WARN("sharded hot key, " << kShards << " shards, " << kLimit << " requests for a limit of " << kLimit << ": "
                           << admitted << " admitted (" << shortfall * 100 << "% turned away early)");
  CHECK(admitted <= kLimit);
  CHECK(shortfall < 0.08);
  // Under overload every shard fills: the key gets its whole limit, never more.
  for (int i = 0; i < 2 * kLimit; ++i) admitted += limiter.tryAcquire("hot").allowed ? 1 : 0;
  CHECK(admitted == kLimit);
}

TEST_CASE("bad cluster input is refused with a named reason, and an unreachable cluster meets the failure policy") {
  CHECK_THROWS_WITH(swl::ClusterConnection::tcp({}), Catch::Contains("no seed node"));
  CHECK_THROWS_AS(swl::ClusterConnection::tcp({swl::Address{"127.0.0.1", 0}}), swl::InvalidArgument);
  swl::ClusterOptions in_db_1;
  in_db_1.connection.db = 1;
  CHECK_THROWS_WITH(swl::ClusterConnection::tcp({swl::Address{"127.0.0.1", 7000}}, in_db_1),
                    Catch::Contains("only database 0"));

  // Keys of one call in two slots cannot run on one master: refused before anything is sent.
  const int closed_port = swl::test::RedisServer::freeLoopbackPort();
  auto nowhere = swl::ClusterConnection::tcp({swl::Address{"127.0.0.1", closed_port}});
  static const swl::Script two_keys("two_keys", "return 1");
  REQUIRE(swl::hashSlot("a") != swl::hashSlot("b"));
  CHECK_THROWS_WITH(nowhere.run(two_keys, {"a", "b"}, {}), Catch::Contains("different hash slots"));

  swl::SlidingWindowLimiter<> throwing(nowhere, swl::Limit{10, 1s});
  CHECK_THROWS_WITH(throwing.tryAcquire("k"), Catch::Contains("no node answered CLUSTER SLOTS"));
  // Within the seed's cool-down it is not dialled again; the error says why and for how long.
  CHECK_THROWS_WITH(throwing.tryAcquire("k"),
                    Catch::Contains("cluster seeds 127.0.0.1:" + std::to_string(closed_port)) &&
                        Catch::Contains("is not asked for another") && Catch::Contains("Connection refused"));
  swl::LimiterOptions fail_open;
  fail_open.on_failure = swl::FailurePolicy::allow;
  swl::SlidingWindowLimiter<> lenient(nowhere, swl::Limit{10, 1s}, fail_open);
  const swl::Decision decision = lenient.tryAcquire("k");
  CHECK(decision.allowed);
  CHECK(decision.tier == swl::Tier::fail_open);
}

TEST_CASE("a frozen master costs a call at most its command timeout and a quarter more, whatever the cluster does") {
  RedisCluster cluster;
  swl::ClusterOptions options;  // the library's defaults, with a timeout large enough to read on a loaded machine
  options.connection.command_timeout = 200ms;
  auto redis = clusterClient(cluster, options);
  swl::LimiterOptions fail_closed;
  fail_closed.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{1'000'000, 3600s}, fail_closed);
  const std::map<int, std::string> keys = keyPerMaster(cluster, limiter);
  for (const auto& [master, key] : keys) REQUIRE(limiter.tryAcquire(key).tier == swl::Tier::redis);

  // Four threads call every master's key in turn while one master is frozen for 3 s (long enough for the
  // cluster to fail it over to its replica midway), and keep the slowest call each saw.
  const int frozen = keys.begin()->first;
  std::atomic<bool> stop{false};
  std::vector<std::chrono::nanoseconds> slowest(4, std::chrono::nanoseconds(0));
  std::vector<int> healthy_decisions(4, 0);
  std::vector<std::thread> threads;
  cluster.node(frozen).pause();
  for (std::size_t thread = 0; thread < 4; ++thread) {
    threads.emplace_back([&, thread] {
      while (!stop) {
        for (const auto& [master, key] : keys) {
          const auto started = std::chrono::steady_clock::now();
          const swl::Decision decision = limiter.tryAcquire(key);
          slowest[thread] =
              std::max<std::chrono::nanoseconds>(slowest[thread], std::chrono::steady_clock::now() - started);
          if (master != frozen && decision.tier == swl::Tier::redis) ++healthy_decisions[thread];
        }
      }
    });
  }
  std::this_thread::sleep_for(3s);
  cluster.node(frozen).resume();
  std::this_thread::sleep_for(500ms);
  stop = true;
  for (std::thread& thread : threads) thread.join();

  const auto worst = *std::max_element(slowest.begin(), slowest.end());
  CAPTURE(std::chrono::duration_cast<std::chrono::milliseconds>(worst).count());
  CHECK(worst <= 200ms + 50ms + 100ms);  // the timeout, a quarter of it to re-read the map, and scheduling
  for (int decisions : healthy_decisions) CHECK(decisions > 100);  // the other masters kept deciding
}
