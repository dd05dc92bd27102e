#pragma once
// A Redis Cluster spread over six sites of a PartitionNetwork, one node per site: three masters and a
// replica of each, made by `redis-cli --cluster create` (which puts no replica on its master's address),
// cluster-node-timeout kNodeTimeoutMs. Cutting the site of the master that serves a key leaves it alone
// with the clients beside it; its replica, on another site, is promoted by the two other masters. Extra
// server arguments (min-replicas-to-write, ...) go to every node.

#include "support/partitioned_servers.hpp"

#include <swl/error.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/hash_slot.hpp>

#include <chrono>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace swl::test {

class PartitionedCluster {
 public:
  static constexpr int kSites = 6;
  static constexpr int kNodeTimeoutMs = 2000;

  PartitionedCluster(PartitionNetwork& network, const std::vector<std::string>& server_arguments = {})
      : servers_(network) {
    for (int site = 0; site < kSites; ++site) {
      const std::string nodes = (servers_.directory() / ("nodes-" + std::to_string(site) + ".conf")).string();
      std::vector<std::string> arguments{"--cluster-enabled",      "yes",
                                         "--cluster-config-file",  nodes,
                                         "--cluster-node-timeout", std::to_string(kNodeTimeoutMs)};
      arguments.insert(arguments.end(), server_arguments.begin(), server_arguments.end());
      servers_.startServer(site, arguments);
    }
    std::vector<std::string> create{"redis-cli", "--cluster", "create"};
    for (int site = 0; site < kSites; ++site) create.push_back(address(site));
    for (const char* option : {"--cluster-replicas", "1", "--cluster-yes"}) create.push_back(option);
    ChildProcess creating;
    creating.start(create, (servers_.directory() / "create.log").string());
    PartitionedServers::waitUntil("redis-cli --cluster create is done", std::chrono::seconds(60),
                                  [&] { return !creating.alive(); });
    PartitionedServers::waitUntil("every node sees the whole cluster, replicas in sync", std::chrono::seconds(60),
                                  [&] { return healthy(); });
  }

  std::vector<swl::Address> seeds() const {
    std::vector<swl::Address> addresses;
    for (int site = 0; site < kSites; ++site) {
      addresses.push_back({servers_.network().address(site), PartitionedServers::kPort});
    }
    return addresses;
  }

  swl::Connection connectToServer(int site) const { return servers_.connectToServer(site); }
  bool isSyncedReplica(int site) const { return servers_.isSyncedReplica(site); }

  // The site of the master that serves `redis_key`, as the node of `asked` sees it; -1 when it names none.
  int masterOf(std::string_view redis_key, int asked) const {
    auto node = connectToServer(asked);
    const std::string nodes = textReply(node, {"CLUSTER", "NODES"});
    const int slot = swl::hashSlot(redis_key);
    std::istringstream lines(nodes);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string id, address, flags, master, ping, pong, epoch, link, range;
      fields >> id >> address >> flags >> master >> ping >> pong >> epoch >> link;
      if (flags.find("master") == std::string::npos || flags.find("fail") != std::string::npos) continue;
      while (fields >> range) {
        const std::size_t dash = range.find('-');
        if (range[0] == '[') continue;  // a slot being migrated
        const int first = std::stoi(range.substr(0, dash));
        const int last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
        if (slot >= first && slot <= last) return siteOf(address);
      }
    }
    return -1;
  }

  // The node of `site` replicates from the node of `master`.
  bool replicates(int site, int master) const {
    auto node = connectToServer(site);
    const std::string info = textReply(node, {"INFO", "replication"});
    return info.find("master_host:" + servers_.network().address(master) + "\r\n") != std::string::npos;
  }

 private:
  // "10.1.2.3:7000@17000" -> the site with that address.
  int siteOf(const std::string& address) const {
    const std::string host = address.substr(0, address.find(':'));
    for (int site = 0; site < kSites; ++site) {
      if (servers_.network().address(site) == host) return site;
    }
    return -1;
  }

  bool healthy() const {
    try {
      int replicas = 0;
      for (int site = 0; site < kSites; ++site) {
        auto node = connectToServer(site);
        const std::string info = textReply(node, {"CLUSTER", "INFO"});
        if (info.find("cluster_state:ok") == std::string::npos ||
            info.find("cluster_known_nodes:" + std::to_string(kSites)) == std::string::npos) {
          return false;
        }
        if (isSyncedReplica(site)) ++replicas;
      }
      return replicas == kSites / 2;
    } catch (const swl::Error&) {
      return false;
    }
  }

  std::string address(int site) const {
    return servers_.network().address(site) + ":" + std::to_string(PartitionedServers::kPort);
  }

  PartitionedServers servers_;
};

}  // namespace swl::test
