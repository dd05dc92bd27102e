#pragma once
// A Sentinel deployment spread over three sites of a PartitionNetwork: each site runs one redis-server and
// one sentinel (quorum 2, down-after kDownAfterMs), site 0's server the master and the others its replicas.
// Cutting site 0 leaves its master and one sentinel on one side, two replicas and two sentinels, which
// can elect and promote, on the other. Extra server arguments (min-replicas-to-write, ...) go to every
// server.

#include "support/partitioned_servers.hpp"

#include <swl/error.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/sentinel_connection.hpp>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace swl::test {

class PartitionedSentinel {
 public:
  static constexpr int kSites = 3;
  static constexpr int kSentinelPort = 27000;
  static constexpr int kDownAfterMs = 1000;

  PartitionedSentinel(PartitionNetwork& network, const std::vector<std::string>& server_arguments = {})
      : servers_(network) {
    for (int site = 0; site < kSites; ++site) {
      std::vector<std::string> arguments = server_arguments;
      if (site > 0) {
        arguments.insert(arguments.end(),
                         {"--replicaof", network.address(0), std::to_string(PartitionedServers::kPort)});
      }
      servers_.startServer(site, arguments);
    }
    for (int site = 0; site < kSites; ++site) startSentinel(site);
    PartitionedServers::waitUntil("the replicas sync and the sentinels know each other", std::chrono::seconds(30),
                                  [&] { return ready(); });
  }

  std::vector<swl::Address> sentinels() const {
    std::vector<swl::Address> addresses;
    for (int site = 0; site < kSites; ++site) addresses.push_back({servers_.network().address(site), kSentinelPort});
    return addresses;
  }

  swl::Connection connectToServer(int site) const { return servers_.connectToServer(site); }
  bool isSyncedReplica(int site) const { return servers_.isSyncedReplica(site); }

  // The site whose server the sentinel of `site` names as the master; -1 when it names none it knows.
  int masterSeenBy(int site) const {
    auto sentinel = connectToSentinel(site);
    const swl::Reply reply = sentinel.command({"SENTINEL", "get-master-addr-by-name", "mymaster"});
    if (!reply->isArray() || reply->size() != 2) return -1;
    for (int candidate = 0; candidate < kSites; ++candidate) {
      if ((*reply)[0].text() == servers_.network().address(candidate)) return candidate;
    }
    return -1;
  }

 private:
  swl::Connection connectToSentinel(int site) const {
    return swl::Connection::tcp(servers_.network().address(site), kSentinelPort, patient());
  }

  void startSentinel(int site) {
    const std::string address = servers_.network().address(site);
    const std::string name = "sentinel-" + std::to_string(site);
    const std::filesystem::path config = servers_.directory() / (name + ".conf");
    std::ofstream out(config);
    out << "port " << kSentinelPort << "\nbind " << address << "\nprotected-mode no\ndaemonize no\n"
        << "logfile \"" << (servers_.directory() / (name + ".log")).string() << "\"\n"
        << "dir \"" << servers_.directory().string() << "\"\n"
        << "sentinel monitor mymaster " << servers_.network().address(0) << ' ' << PartitionedServers::kPort << " 2\n"
        << "sentinel down-after-milliseconds mymaster " << kDownAfterMs << '\n'
        << "sentinel failover-timeout mymaster 3000\n"
        << "sentinel parallel-syncs mymaster 1\n";
    out.close();
    if (!out) throw std::runtime_error("cannot write " + config.string());
    servers_.start(site, {"redis-server", config.string(), "--sentinel"});
  }

  // Both replicas in sync, and every sentinel names the master and knows both replicas and both other
  // sentinels: only then can two of them agree that the master is down and promote a replica.
  bool ready() const {
    try {
      for (int site = 1; site < kSites; ++site) {
        if (!isSyncedReplica(site)) return false;
      }
      for (int site = 0; site < kSites; ++site) {
        if (masterSeenBy(site) != 0) return false;
        auto sentinel = connectToSentinel(site);
        const swl::Reply replicas = sentinel.command({"SENTINEL", "replicas", "mymaster"});
        const swl::Reply peers = sentinel.command({"SENTINEL", "sentinels", "mymaster"});
        if (!replicas->isArray() || replicas->size() != kSites - 1) return false;
        if (!peers->isArray() || peers->size() != kSites - 1) return false;
      }
      return true;
    } catch (const swl::Error&) {
      return false;
    }
  }

  PartitionedServers servers_;
};

}  // namespace swl::test
