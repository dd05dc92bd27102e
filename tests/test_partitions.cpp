// What "exact" means when the network splits. The master that serves a key is cut off, with the clients
// beside it, from its replicas, the sentinels or masters that could replace it and the other clients, for
// longer than they wait before they promote a replica; then the cut heals. Clients on both sides keep
// asking, over the limit, and every admission's span is kept (tests/support/admission_spans.hpp): the
// most spans inside one window bound what any window admitted. An admission is lost when its entry never
// reached the majority's side: a watcher there reads the key on every server outside the cut every 100 ms,
// more often than an entry can leave a window. The servers run in network namespaces of their own
// (tests/support/network_partition.hpp); the tests skip, saying why, where those cannot be made.

#include <swl/swl.hpp>

#include "support/admission_spans.hpp"
#include "support/network_partition.hpp"
#include "support/partitioned_cluster.hpp"
#include "support/partitioned_sentinel.hpp"
#include "support/partitioned_servers.hpp"
#include "support/planned_failover.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using swl::test::PartitionedCluster;
using swl::test::PartitionedSentinel;
using swl::test::PartitionNetwork;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kMaxRequests = 100;
constexpr auto kWindow = 2s;
constexpr auto kCut = 8s;  // well past the sentinels' down-after (1 s) and the cluster's node timeout (2 s)
// A cut after which the majority must have admitted lasts past kCut until it has, up to kLongestCut: on a
// loaded machine promoting a replica (and, with min-replicas-to-write, syncing it a replica of its own) can
// take longer than kCut, and the test is about what happens, not how fast.
constexpr auto kLongestCut = 30s;
constexpr int kThreadsPerSide = 2;
constexpr auto kPause = 8ms;  // per thread: 250 calls a second a side, 5x the limit's rate
const std::string kKey = swl::PrefixKey().key("hot");
// Without replica_acks, an admission the master acknowledged just before the cut, which never reached its
// replica, is lost whichever side asked: the cut can fall inside replication's lag.
constexpr long long kInFlightAtTheCut = 2;

enum Side { majority, minority };

// A deployment as runPartition sees it.
struct Partitioned {
  PartitionNetwork& network;
  int cut_site = 0;                // the key's master, and the minority's clients beside it
  std::vector<int> watched_sites;  // the servers outside the cut that hold or will hold the key
  std::function<std::unique_ptr<swl::RedisClient>()> client;  // made by the thread that uses it
  std::function<swl::Connection(int site)> connect;
  std::function<bool()> rejoined;  // the cut-off master replicates from the new one, in sync
};

struct Call {
  Side side;
  Clock::time_point before, after;
  bool admitted_by_redis;
  bool answered_by_policy;
  std::string member;
};

// What one partition did, as both sides' clients saw it.
struct PartitionResult {
  long long most_in_a_window = 0;                // the most admissions (by Redis, either side) inside one window
  long long admitted = 0;                        // by Redis, in all
  long long admitted_in_cut[2] = {};             // by Redis, asked and answered while the cut lasted, per side
  long long lost[2] = {};                        // admitted by Redis, never on the majority's side, per side
  long long by_policy[2] = {};                   // decisions the failure policy made, per side
  std::chrono::milliseconds errors_for[2] = {};  // from a side's first policy answer to its last
  std::chrono::milliseconds cut{0};              // how long the cut lasted
};

std::string describe(const PartitionResult& r) {
  const auto side = [&](const long long(&values)[2]) {
    return std::to_string(values[majority]) + " / " + std::to_string(values[minority]);
  };
  return "most in one window " + std::to_string(r.most_in_a_window) + " of " + std::to_string(kMaxRequests) +
         "; (majority / minority) admitted during the " + std::to_string(r.cut.count()) + " ms cut " +
         side(r.admitted_in_cut) + ", lost " + side(r.lost) + " of " + std::to_string(r.admitted) +
         " admitted; policy answers " + side(r.by_policy) + " over " + std::to_string(r.errors_for[majority].count()) +
         " / " + std::to_string(r.errors_for[minority].count()) + " ms";
}

// Reads the key on the watched servers every 100 ms until stopped: every member that reached them.
class Watcher {
 public:
  explicit Watcher(const Partitioned& deployment)
      : thread_([this, &deployment] {
          std::vector<std::unique_ptr<swl::Connection>> servers;
          for (int site : deployment.watched_sites) {
            servers.push_back(std::make_unique<swl::Connection>(deployment.connect(site)));
          }
          while (!stop_) {
            for (auto& server : servers) {
              try {
                // A cluster replica answers reads only after READONLY, which a reconnect forgets; a server
                // outside a cluster refuses it, and answers anyway.
                server->command({"READONLY"});
                const swl::Reply entries = server->command({"ZRANGE", kKey, "0", "-1"});
                const std::lock_guard<std::mutex> lock(mutex_);
                for (std::size_t i = 0; entries->isArray() && i < entries->size(); ++i) {
                  seen_.insert(std::string((*entries)[i].text()));
                }
              } catch (const swl::Error&) {
                // a server restarting its replication: read again next time
              }
            }
            std::this_thread::sleep_for(100ms);
          }
        }) {}
  ~Watcher() { stopWatching(); }
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  std::set<std::string> stopWatching() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    const std::lock_guard<std::mutex> lock(mutex_);
    return seen_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::set<std::string> seen_;
  std::thread thread_;
};

// Cuts the key's master (and the minority's clients) off for kCut under load, heals it, waits until it has
// rejoined as a replica, and measures. Every limiter refuses when Redis cannot answer (fail closed), so
// that every admission counted is Redis's.
// `majority_goes_on`: the majority's side is expected to admit during the cut (the cut waits for it).
PartitionResult runPartition(const Partitioned& deployment, bool majority_goes_on) {
  std::mutex mutex;
  std::vector<Call> calls;
  std::atomic<bool> stop{false};
  const swl::test::RememberedMember members;  // copies share one counter: a member is never used twice
  Watcher watcher(deployment);

  std::vector<std::thread> threads;
  for (int side : {majority, minority}) {
    for (int t = 0; t < kThreadsPerSide; ++t) {
      threads.emplace_back([&, side] {
        std::unique_ptr<PartitionNetwork::Inside> inside;
        if (side == minority)
          inside = std::make_unique<PartitionNetwork::Inside>(deployment.network, deployment.cut_site);
        const std::unique_ptr<swl::RedisClient> redis = deployment.client();
        swl::LimiterOptions fail_closed;
        fail_closed.on_failure = swl::FailurePolicy::deny;
        swl::SlidingWindowLimiter<swl::PrefixKey, swl::test::RememberedMember> limiter(
            *redis, swl::Limit{kMaxRequests, kWindow}, fail_closed, swl::PrefixKey(), members);
        while (!stop) {
          const auto before = Clock::now();
          const swl::Decision decision = limiter.tryAcquire("hot");
          const auto after = Clock::now();
          {
            const std::lock_guard<std::mutex> lock(mutex);
            calls.push_back({static_cast<Side>(side), before, after,
                             decision.allowed && decision.tier == swl::Tier::redis, decision.tier != swl::Tier::redis,
                             swl::test::RememberedMember::last()});
          }
          std::this_thread::sleep_until(before + kPause);
        }
      });
    }
  }

  std::this_thread::sleep_for(kWindow + 1s);  // every window full by now
  deployment.network.cut(deployment.cut_site);
  const auto cut_at = Clock::now();  // once the link is down: `ip` takes a while on a loaded machine
  std::this_thread::sleep_for(kCut);
  const auto majorityAdmitted = [&] {
    const std::lock_guard<std::mutex> lock(mutex);
    return std::any_of(calls.begin(), calls.end(), [&](const Call& call) {
      return call.side == majority && call.admitted_by_redis && call.before >= cut_at;
    });
  };
  while (majority_goes_on && !majorityAdmitted() && Clock::now() < cut_at + kLongestCut) {
    std::this_thread::sleep_for(100ms);
  }
  const auto healed_at = Clock::now();  // before the link is up again
  deployment.network.heal(deployment.cut_site);
  swl::test::PartitionedServers::waitUntil("the cut-off master rejoins as a replica", 30s, deployment.rejoined);
  std::this_thread::sleep_for(1s);
  stop = true;
  for (std::thread& thread : threads) thread.join();
  std::this_thread::sleep_for(300ms);  // the watcher reads the last admissions once more
  const std::set<std::string> reached_majority = watcher.stopWatching();

  PartitionResult result;
  result.cut = std::chrono::duration_cast<std::chrono::milliseconds>(healed_at - cut_at);
  std::vector<swl::test::Span> spans;
  const auto ns = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  Clock::time_point first_error[2] = {Clock::time_point::max(), Clock::time_point::max()};
  Clock::time_point last_error[2] = {};
  for (const Call& call : calls) {
    if (call.admitted_by_redis) {
      ++result.admitted;
      spans.push_back({ns(call.before), ns(call.after)});
      if (call.before >= cut_at && call.after <= healed_at) ++result.admitted_in_cut[call.side];
      if (reached_majority.count(call.member) == 0) ++result.lost[call.side];
    }
    if (call.answered_by_policy) {
      ++result.by_policy[call.side];
      first_error[call.side] = std::min(first_error[call.side], call.before);
      last_error[call.side] = std::max(last_error[call.side], call.after);
    }
  }
  for (int side : {majority, minority}) {
    if (result.by_policy[side] > 0) {
      result.errors_for[side] =
          std::chrono::duration_cast<std::chrono::milliseconds>(last_error[side] - first_error[side]);
    }
  }
  result.most_in_a_window = swl::test::mostInOneWindow(spans, std::chrono::nanoseconds(kWindow).count());
  return result;
}

// The client's timeouts: short enough that a side cut off sees errors within a fraction of a second.
swl::ConnectionOptions clientConnection(int replica_acks) {
  swl::ConnectionOptions options;
  options.connect_timeout = 300ms;
  options.command_timeout = 300ms;
  options.replica_acks = replica_acks;
  return options;
}

PartitionResult sentinelPartition(const std::vector<std::string>& server_arguments, int replica_acks) {
  PartitionNetwork network(PartitionedSentinel::kSites);
  PartitionedSentinel sentinel(network, server_arguments);
  swl::SentinelOptions options;
  options.sentinel = clientConnection(0);
  options.master = clientConnection(replica_acks);
  Partitioned deployment{
      network,
      0,
      {1, 2},
      [&] { return std::make_unique<swl::SentinelConnection>(sentinel.sentinels(), "mymaster", options); },
      [&](int site) { return sentinel.connectToServer(site); },
      [&] { return sentinel.isSyncedReplica(0); }};
  return runPartition(deployment, true);  // a replica is promoted, and has the other one beside it
}

PartitionResult clusterPartition(const std::vector<std::string>& server_arguments, int replica_acks,
                                 bool majority_goes_on) {
  PartitionNetwork network(PartitionedCluster::kSites);
  PartitionedCluster cluster(network, server_arguments);
  const int master = cluster.masterOf(kKey, 0);
  REQUIRE(master >= 0);
  int replica = -1;
  for (int site = 0; site < PartitionedCluster::kSites; ++site) {
    if (site != master && cluster.isSyncedReplica(site) && cluster.replicates(site, master)) replica = site;
  }
  REQUIRE(replica >= 0);
  swl::ClusterOptions options;
  options.connection = clientConnection(replica_acks);
  Partitioned deployment{network,
                         master,
                         {replica},
                         [&] { return std::make_unique<swl::ClusterConnection>(cluster.seeds(), options); },
                         [&](int site) { return cluster.connectToServer(site); },
                         [&] { return cluster.isSyncedReplica(master); }};
  return runPartition(deployment, majority_goes_on);
}

// Without the setting: both sides admitted during the cut, together at most twice the limit in a window,
// and nothing the minority admitted then reached the majority, so it is lost at the heal, when the cut-off
// master takes the promoted replica's data.
void checkBothSidesDecidedAndTheMinorityLost(const PartitionResult& result) {
  CHECK(result.admitted_in_cut[majority] > 0);
  CHECK(result.admitted_in_cut[minority] > 0);
  CHECK(result.most_in_a_window <= 2 * kMaxRequests);
  CHECK(result.lost[minority] >= result.admitted_in_cut[minority]);
  CHECK(result.lost[majority] <= kInFlightAtTheCut);
}

// With it: no window over the limit, nothing acknowledged lost, and nothing admitted on the cut-off side.
void checkNothingOverAndNothingLost(const PartitionResult& result) {
  CHECK(result.most_in_a_window <= kMaxRequests);
  CHECK(result.lost[majority] + result.lost[minority] == 0);
  CHECK(result.admitted_in_cut[minority] == 0);
}

// The servers' side of the setting: a master whose replicas are gone stops taking writes.
const std::vector<std::string> kWritesNeedAReplica{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "2"};

// The tests skip, saying why, where network namespaces cannot be made.
bool partitionsUnavailable() {
  const std::string why = PartitionNetwork::whyUnavailable();
  if (!why.empty()) WARN("skipped: " << why);
  return !why.empty();
}

}  // namespace

TEST_CASE(
    "a Sentinel master cut off with some clients: each side admits up to the limit per window for as long as "
    "the cut lasts, and what the cut-off side admitted is lost at the heal") {
  if (partitionsUnavailable()) return;
  const PartitionResult result = sentinelPartition({}, 0);
  WARN("Sentinel partition, defaults: " << describe(result));
  // The majority decided on the replica it promoted, the minority on the master cut off beside it, all the
  // while the cut lasted, each up to the limit per window.
  checkBothSidesDecidedAndTheMinorityLost(result);
}

TEST_CASE(
    "with replica_acks = 1 and min-replicas-to-write 1, a Sentinel master cut off with some clients admits "
    "nothing, no window is over the limit and nothing acknowledged is lost") {
  if (partitionsUnavailable()) return;
  const PartitionResult result = sentinelPartition(kWritesNeedAReplica, 1);
  WARN("Sentinel partition, replica_acks 1, min-replicas-to-write 1: " << describe(result));
  checkNothingOverAndNothingLost(result);
  // The promoted replica has the other one to acknowledge it: the majority's side goes on admitting.
  CHECK(result.admitted_in_cut[majority] > 0);
}

TEST_CASE(
    "a Cluster master cut off with some clients admits until the node timeout, its replica is promoted after "
    "it, and what the cut-off side admitted is lost at the heal") {
  if (partitionsUnavailable()) return;
  const PartitionResult result = clusterPartition({}, 0, true);
  WARN("Cluster partition, defaults: " << describe(result));
  // The cut-off master stops taking writes at the node timeout, and its replica is promoted only after it:
  // the two sides never decide at once, but a window longer than the gap holds both sides' admissions.
  checkBothSidesDecidedAndTheMinorityLost(result);
}

TEST_CASE(
    "with replica_acks = 1 and min-replicas-to-write 1, a Cluster master cut off with some clients leaves the "
    "key's slots admitting nothing while the cut lasts, on either side, so no window is over the limit and "
    "nothing acknowledged is lost") {
  if (partitionsUnavailable()) return;
  const PartitionResult result = clusterPartition(kWritesNeedAReplica, 1, false);
  WARN("Cluster partition, replica_acks 1, min-replicas-to-write 1: " << describe(result));
  checkNothingOverAndNothingLost(result);
  // The price: the promoted replica has no replica of its own to acknowledge, so it admits nothing either
  // until the cut-off master rejoins as its replica.
  CHECK(result.admitted_in_cut[majority] == 0);
}
