#pragma once
// A private Redis Cluster for one test: 3 masters with a replica each, six redis-server processes on
// free loopback ports (their cluster bus ports chosen free as well), joined by
// `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes` as an operator would. Each node
// is stopped by its pid; the nodes' config files live in a temporary directory removed at the end.

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <swl/error.hpp>
#include <swl/redis/cluster_connection.hpp>
#include <swl/redis/connection.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace swl::test {

class RedisCluster {
 public:
  static constexpr int kMasters = 3;
  static constexpr int kNodes = 6;
  // A failed master is noticed after this long (and its replica elected soon after), so the
  // failover tests take seconds, not the default 15 s.
  static constexpr int kNodeTimeoutMs = 1000;

  // Arguments a node gets besides the cluster's own (a TLS cluster's ports and certificates), asked for
  // each node as it starts.
  using NodeArguments = std::function<std::vector<std::string>()>;

  explicit RedisCluster(NodeArguments node_arguments = {})
      : directory_(makeDirectory()), node_arguments_(std::move(node_arguments)) {
    try {
      for (int i = 0; i < kNodes; ++i) startNode();
      std::vector<std::string> create{"redis-cli", "--cluster", "create"};
      for (const auto& node : nodes_) create.push_back("127.0.0.1:" + std::to_string(node->port()));
      for (const char* option : {"--cluster-replicas", "1", "--cluster-yes"}) create.push_back(option);
      if (runQuietly(create) != 0) throw std::runtime_error("redis-cli --cluster create failed, see " + log());
      waitUntilHealthy(true);
    } catch (...) {
      nodes_.clear();
      std::filesystem::remove_all(directory_);
      throw;
    }
  }

  ~RedisCluster() {
    nodes_.clear();  // stops every node by its pid
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  std::vector<swl::Address> seeds() const {
    return {{"127.0.0.1", nodes_[0]->port()}, {"127.0.0.1", nodes_[1]->port()}};
  }

  RedisServer& node(int port) {
    for (auto& node : nodes_) {
      if (node->port() == port) return *node;
    }
    throw std::runtime_error("no cluster node on port " + std::to_string(port));
  }

  // An admin connection, patient: a loaded machine must not fail a test on the library's defaults.
  swl::Connection connect(int port) const { return swl::Connection::tcp("127.0.0.1", port, patient()); }

  // Asked of a node that is up; ports of the masters serving slots, in slot order.
  std::vector<int> masterPorts() {
    std::vector<int> ports;
    for (const auto& [first_slot, port] : slotOwners()) {
      if (std::find(ports.begin(), ports.end(), port) == ports.end()) ports.push_back(port);
    }
    return ports;
  }

  int masterOf(std::uint16_t slot) {
    int owner = 0;
    for (const auto& [first_slot, port] : slotOwners()) {
      if (first_slot <= slot) owner = port;
    }
    return owner;
  }

  int replicaOf(int master_port) {
    // A TLS cluster replicates over TLS: its replicas name the master's TLS port.
    auto master = connect(master_port);
    const swl::Reply tls_port = master.command({"CONFIG", "GET", "tls-port"});
    const std::string tls_master_port = tls_port->size() == 2 ? std::string((*tls_port)[1].text()) : "0";
    for (auto& node : nodes_) {
      if (!node->running()) continue;
      auto connection = connect(node->port());
      const std::string info = textReply(connection, {"INFO", "replication"});
      if (info.find("role:slave") != std::string::npos &&
          (info.find("master_port:" + std::to_string(master_port) + "\r\n") != std::string::npos ||
           info.find("master_port:" + tls_master_port + "\r\n") != std::string::npos)) {
        return node->port();
      }
    }
    throw std::runtime_error("no replica of the master on port " + std::to_string(master_port));
  }

  std::string nodeId(int port) {
    auto connection = connect(port);
    return textReply(connection, {"CLUSTER", "MYID"});
  }

  // Every running node says cluster_state:ok and all of them see the same 3 masters over all 16384
  // slots; with `replicas_in_sync`, every master also has a replica whose link is up.
  void waitUntilHealthy(bool replicas_in_sync = false, std::chrono::seconds patience = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    std::string why;
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        why = unhealthy(replicas_in_sync);
        if (why.empty()) return;
      } catch (const std::exception& error) {  // a node still starting, or no replica found yet
        why = error.what();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("the test cluster did not become healthy: " + why);
  }

  std::string log() const { return (directory_ / "redis-cli.log").string(); }

 private:
  static std::filesystem::path makeDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "swl-cluster-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a directory for the cluster");
    return pattern;
  }

  void startNode() {
    for (int attempt = 1;; ++attempt) {
      const int port = RedisServer::freeLoopbackPort();
      const int bus_port = RedisServer::freeLoopbackPort();
      if (bus_port == port) continue;
      std::vector<std::string> arguments{"--cluster-enabled", "yes", "--cluster-port", std::to_string(bus_port),
                                         "--cluster-config-file", "nodes-" + std::to_string(port) + ".conf",
                                         "--cluster-node-timeout", std::to_string(kNodeTimeoutMs), "--dir",
                                         directory_.string(),
                                         // replicas sync at once, not after the default 5 s wait
                                         "--repl-diskless-sync-delay", "0"};
      if (node_arguments_) {
        for (std::string& argument : node_arguments_()) arguments.push_back(std::move(argument));
      }
      try {
        nodes_.push_back(std::make_unique<RedisServer>(port, std::move(arguments)));
        return;
      } catch (const std::runtime_error&) {
        if (attempt == 3) throw;  // another process took a port in between: try others
      }
    }
  }

  int runQuietly(const std::vector<std::string>& command) const {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<std::string> arguments = command;
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) return -1;
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // First slot of each range -> port of its master, as the first running node sees it.
  std::map<int, int> slotOwners() {
    for (auto& node : nodes_) {
      if (node->running()) return slotOwnersSeenBy(node->port());
    }
    throw std::runtime_error("no cluster node is running");
  }

  std::map<int, int> slotOwnersSeenBy(int port) {
    auto connection = connect(port);
    const swl::Reply reply = connection.command({"CLUSTER", "SLOTS"});
    std::map<int, int> owners;
    for (const auto& range : swl::detail::parseClusterSlots(*reply, {"127.0.0.1", port})) {
      owners[range.first] = range.master.port;
    }
    return owners;
  }

  std::string unhealthy(bool replicas_in_sync) {
    std::map<int, int> agreed;
    int agreed_by = 0;
    for (auto& node : nodes_) {
      if (!node->running()) continue;
      auto connection = connect(node->port());
      if (textReply(connection, {"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos) {
        return "node " + std::to_string(node->port()) + " is not in cluster_state:ok";
      }
      const std::map<int, int> owners = slotOwnersSeenBy(node->port());
      if (agreed_by == 0) {
        agreed = owners, agreed_by = node->port();
      } else if (owners != agreed) {
        return "nodes " + std::to_string(agreed_by) + " and " + std::to_string(node->port()) + " disagree on slots";
      }
    }
    std::set<int> masters;
    for (const auto& [first_slot, port] : agreed) masters.insert(port);
    if (masters.size() != kMasters) return std::to_string(masters.size()) + " masters serve slots";
    if (!replicas_in_sync) return {};
    for (int master : masters) {
      auto replica = connect(replicaOf(master));
      if (textReply(replica, {"INFO", "replication"}).find("master_link_status:up") == std::string::npos) {
        return "the replica of " + std::to_string(master) + " is not in sync";
      }
    }
    return {};
  }

  std::filesystem::path directory_;
  NodeArguments node_arguments_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace swl::test
