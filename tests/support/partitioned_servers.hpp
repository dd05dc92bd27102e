#pragma once
// Processes spread over the sites of a PartitionNetwork, for the deployments the partition tests cut
// (partitioned_sentinel.hpp, partitioned_cluster.hpp): at most one redis-server per site, on kPort inside the
// site's own namespace, without persistence, its files in a directory of its own. The test reaches each
// server through the bridge. Every process is stopped by its pid, the last started first (so that a
// sentinel never reconfigures a server while it stops); the working directory is removed at the end.

#include "support/child_process.hpp"
#include "support/network_partition.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <swl/error.hpp>
#include <swl/redis/connection.hpp>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace swl::test {

class PartitionedServers {
 public:
  static constexpr int kPort = 7000;  // inside each site's own namespace: no port is shared

  explicit PartitionedServers(PartitionNetwork& network) : network_(network), directory_(makeDirectory()) {}
  ~PartitionedServers() {
    while (!processes_.empty()) processes_.pop_back();
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  PartitionedServers(const PartitionedServers&) = delete;
  PartitionedServers& operator=(const PartitionedServers&) = delete;

  PartitionNetwork& network() const { return network_; }
  const std::filesystem::path& directory() const { return directory_; }

  // A redis-server in `site` with `arguments` beside the usual ones; returns once it answers.
  void startServer(int site, const std::vector<std::string>& arguments) {
    const std::filesystem::path files = directory_ / ("server-" + std::to_string(site));
    std::filesystem::create_directory(files);
    std::vector<std::string> command{"redis-server", "--port", std::to_string(kPort), "--bind", network_.address(site),
                                     "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir",
                                     files.string(), "--logfile", (files / "redis.log").string(),
                                     // replicas sync at once, not after the default 5 s wait
                                     "--repl-diskless-sync-delay", "0"};
    command.insert(command.end(), arguments.begin(), arguments.end());
    start(site, command);
    waitUntil("the server of site " + std::to_string(site) + " answers", std::chrono::seconds(10), [&] {
      try {
        connectToServer(site).ping();
        return true;
      } catch (const swl::Error&) {
        return false;
      }
    });
  }

  // Any process in `site`.
  void start(int site, const std::vector<std::string>& command) {
    processes_.push_back(std::make_unique<ChildProcess>());
    processes_.back()->start(network_.inside(site, command));
  }

  // From the calling thread's namespace, patient: a loaded machine must not fail a test on the defaults.
  swl::Connection connectToServer(int site) const {
    return swl::Connection::tcp(network_.address(site), kPort, patient());
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
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a directory for the servers");
    return pattern;
  }

  PartitionNetwork& network_;
  std::filesystem::path directory_;
  std::vector<std::unique_ptr<ChildProcess>> processes_;
};

}  // namespace swl::test
