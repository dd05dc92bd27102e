#pragma once
// A Sentinel deployment spread over three sites of a PartitionNetwork: each site runs one redis-server and
// one sentinel (quorum 2, down-after kDownAfterMs), site 0's server the master and the others its replicas.
// Cutting site 0 leaves its master and one sentinel on one side, two replicas and two sentinels, which
// can elect and promote, on the other. Extra server arguments (min-replicas-to-write, ...) go to every
// server. Every process is stopped by its pid; the working directory is removed at the end.

#include "support/child_process.hpp"
#include "support/network_partition.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <swl/error.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/sentinel_connection.hpp>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace swl::test {

class PartitionedSentinel {
 public:
  static constexpr int kSites = 3;
  static constexpr int kDataPort = 7000;  // inside each site's own namespace: no port is shared
  static constexpr int kSentinelPort = 27000;
  static constexpr int kDownAfterMs = 1000;

  PartitionedSentinel(PartitionNetwork& network, std::vector<std::string> server_arguments = {})
      : network_(network), directory_(makeDirectory()) {
    try {
      for (int site = 0; site < kSites; ++site) startServer(site, server_arguments);
      for (int site = 0; site < kSites; ++site) startSentinel(site);
      waitUntil("the replicas sync and the sentinels know each other", std::chrono::seconds(30),
                [&] { return ready(); });
    } catch (...) {
      stopAll();
      throw;
    }
  }
  ~PartitionedSentinel() { stopAll(); }
  PartitionedSentinel(const PartitionedSentinel&) = delete;
  PartitionedSentinel& operator=(const PartitionedSentinel&) = delete;

  std::vector<swl::Address> sentinels() const {
    std::vector<swl::Address> addresses;
    for (int site = 0; site < kSites; ++site) addresses.push_back({network_.address(site), kSentinelPort});
    return addresses;
  }

  // From the test's own namespace, patient: a loaded machine must not fail a test on the library's defaults.
  swl::Connection connectToServer(int site) const {
    return swl::Connection::tcp(network_.address(site), kDataPort, patient());
  }
  swl::Connection connectToSentinel(int site) const {
    return swl::Connection::tcp(network_.address(site), kSentinelPort, patient());
  }

  // The site whose server the sentinel of `site` names as the master; -1 when it names none it knows.
  int masterSeenBy(int site) const {
    auto sentinel = connectToSentinel(site);
    const swl::Reply reply = sentinel.command({"SENTINEL", "get-master-addr-by-name", "mymaster"});
    if (!reply->isArray() || reply->size() != 2) return -1;
    for (int candidate = 0; candidate < kSites; ++candidate) {
      if ((*reply)[0].text() == network_.address(candidate)) return candidate;
    }
    return -1;
  }

  // The server of `site` replicates from a master and is in sync with it.
  bool isSyncedReplica(int site) const {
    try {
      auto server = connectToServer(site);
      const std::string info = textReply(server, {"INFO", "replication"});
      return info.find("role:slave") != std::string::npos && info.find("master_link_status:up") != std::string::npos;
    } catch (const swl::Error&) {
      return false;
    }
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
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a directory for the deployment");
    return pattern;
  }

  void startServer(int site, const std::vector<std::string>& extra) {
    const std::filesystem::path directory = directory_ / ("server-" + std::to_string(site));
    std::filesystem::create_directory(directory);
    std::vector<std::string> arguments{"redis-server",
                                       "--port",
                                       std::to_string(kDataPort),
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
                                       "0"};
    if (site > 0) arguments.insert(arguments.end(), {"--replicaof", network_.address(0), std::to_string(kDataPort)});
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    processes_.push_back(std::make_unique<ChildProcess>());
    processes_.back()->start(network_.inside(site, arguments));
    waitUntil("the server of site " + std::to_string(site) + " answers", std::chrono::seconds(10), [&] {
      try {
        connectToServer(site).ping();
        return true;
      } catch (const swl::Error&) {
        return false;
      }
    });
  }

  void startSentinel(int site) {
    const std::filesystem::path config = directory_ / ("sentinel-" + std::to_string(site) + ".conf");
    std::ofstream out(config);
    out << "port " << kSentinelPort << "\nbind " << network_.address(site) << "\nprotected-mode no\ndaemonize no\n"
        << "logfile \"" << (directory_ / ("sentinel-" + std::to_string(site) + ".log")).string() << "\"\n"
        << "dir \"" << directory_.string() << "\"\n"
        << "sentinel monitor mymaster " << network_.address(0) << ' ' << kDataPort << " 2\n"
        << "sentinel down-after-milliseconds mymaster " << kDownAfterMs << '\n'
        << "sentinel failover-timeout mymaster 3000\n"
        << "sentinel parallel-syncs mymaster 1\n";
    out.close();
    if (!out) throw std::runtime_error("cannot write " + config.string());
    processes_.push_back(std::make_unique<ChildProcess>());
    processes_.back()->start(network_.inside(site, {"redis-server", config.string(), "--sentinel"}));
  }

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

  void stopAll() {
    // Sentinels last started, first stopped, so that none reconfigures a server while it stops.
    while (!processes_.empty()) processes_.pop_back();
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

  PartitionNetwork& network_;
  std::filesystem::path directory_;
  std::vector<std::unique_ptr<ChildProcess>> processes_;
};

}  // namespace swl::test
