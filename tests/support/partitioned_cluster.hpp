#pragma once
// A Redis Cluster spread over six sites of a PartitionNetwork, one node per site: three masters and a
// replica of each, made by `redis-cli --cluster create` (which puts no replica on its master's address),
// cluster-node-timeout kNodeTimeoutMs. Cutting the site of the master that serves a key leaves it alone
// with the clients beside it; its replica, on another site, is promoted by the two other masters. Extra
// server arguments (min-replicas-to-write, ...) go to every node. Every process is stopped by its pid;
// the working directory is removed at the end.

#include "support/child_process.hpp"
#include "support/network_partition.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <swl/error.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/hash_slot.hpp>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace swl::test {

class PartitionedCluster {
 public:
  static constexpr int kSites = 6;
  static constexpr int kPort = 7000;  // inside each site's own namespace: no port is shared
  static constexpr int kNodeTimeoutMs = 2000;

  PartitionedCluster(PartitionNetwork& network, std::vector<std::string> server_arguments = {})
      : network_(network), directory_(makeDirectory()) {
    try {
      for (int site = 0; site < kSites; ++site) startNode(site, server_arguments);
      std::vector<std::string> create{"redis-cli", "--cluster", "create"};
      for (int site = 0; site < kSites; ++site) create.push_back(network_.address(site) + ":" + std::to_string(kPort));
      for (const char* option : {"--cluster-replicas", "1", "--cluster-yes"}) create.push_back(option);
      ChildProcess creating;
      creating.start(create, (directory_ / "create.log").string());
      waitUntil("redis-cli --cluster create is done", std::chrono::seconds(60), [&] { return !creating.alive(); });
      waitUntil("every node sees the whole cluster, replicas in sync", std::chrono::seconds(60),
                [&] { return healthy(); });
    } catch (...) {
      stopAll();
      throw;
    }
  }
  ~PartitionedCluster() { stopAll(); }
  PartitionedCluster(const PartitionedCluster&) = delete;
  PartitionedCluster& operator=(const PartitionedCluster&) = delete;

  std::vector<swl::Address> seeds() const {
    std::vector<swl::Address> addresses;
    for (int site = 0; site < kSites; ++site) addresses.push_back({network_.address(site), kPort});
    return addresses;
  }

  // From the calling thread's namespace, patient: a loaded machine must not fail a test on the defaults.
  swl::Connection connectToServer(int site) const {
    return swl::Connection::tcp(network_.address(site), kPort, patient());
  }

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

  // The node of `site` replicates from a master and is in sync with it.
  bool isSyncedReplica(int site) const {
    try {
      auto node = connectToServer(site);
      const std::string info = textReply(node, {"INFO", "replication"});
      return info.find("role:slave") != std::string::npos && info.find("master_link_status:up") != std::string::npos;
    } catch (const swl::Error&) {
      return false;
    }
  }

  // The node of `site` replicates from the node of `master`.
  bool replicates(int site, int master) const {
    auto node = connectToServer(site);
    const std::string info = textReply(node, {"INFO", "replication"});
    return info.find("master_host:" + network_.address(master) + "\r\n") != std::string::npos;
  }

  template <class Condition>
  static void waitUntil(const std::string& what, std::chrono::milliseconds patience, Condition&& condition) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!condition()) {
      if (std::chrono::steady_clock::now() >= deadline) throw std::runtime_error("timed out waiting until " + what);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

 private:
  static std::filesystem::path makeDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "swl-partition-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a directory for the cluster");
    return pattern;
  }

  // "10.1.2.3:7000@17000" -> the site with that address.
  int siteOf(const std::string& address) const {
    const std::string host = address.substr(0, address.find(':'));
    for (int site = 0; site < kSites; ++site) {
      if (network_.address(site) == host) return site;
    }
    return -1;
  }

  void startNode(int site, const std::vector<std::string>& extra) {
    const std::filesystem::path directory = directory_ / ("node-" + std::to_string(site));
    std::filesystem::create_directory(directory);
    std::vector<std::string> arguments{"redis-server",
                                       "--port",
                                       std::to_string(kPort),
                                       "--bind",
                                       network_.address(site),
                                       "--protected-mode",
                                       "no",
                                       "--save",
                                       "",
                                       "--appendonly",
                                       "no",
                                       "--dir",
                                       directory.string(),
                                       "--logfile",
                                       (directory / "redis.log").string(),
                                       "--repl-diskless-sync-delay",
                                       "0",
                                       "--cluster-enabled",
                                       "yes",
                                       "--cluster-config-file",
                                       (directory / "nodes.conf").string(),
                                       "--cluster-node-timeout",
                                       std::to_string(kNodeTimeoutMs)};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    processes_.push_back(std::make_unique<ChildProcess>());
    processes_.back()->start(network_.inside(site, arguments));
    waitUntil("the node of site " + std::to_string(site) + " answers", std::chrono::seconds(10), [&] {
      try {
        connectToServer(site).ping();
        return true;
      } catch (const swl::Error&) {
        return false;
      }
    });
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

  void stopAll() {
    while (!processes_.empty()) processes_.pop_back();
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

  PartitionNetwork& network_;
  std::filesystem::path directory_;
  std::vector<std::unique_ptr<ChildProcess>> processes_;
};

}  // namespace swl::test
