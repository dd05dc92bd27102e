#pragma once
// A private Sentinel deployment for one test: a master and its replica (two redis-server processes) watched
// by three sentinels (`redis-server <conf> --sentinel`, quorum 2), all on free loopback ports. A failed
// master is noticed after kDownAfterMs, so a failover takes seconds, not the default 30 s. Every process is
// stopped by its pid; the sentinels' config files (which they rewrite) live in a temporary directory
// removed at the end.

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <swl/detail/io/hiredis.hpp>
#include <swl/error.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/sentinel_connection.hpp>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace swl::test {

class RedisSentinel {
 public:
  static constexpr std::string_view kMasterName = "mymaster";
  static constexpr int kSentinels = 3;
  static constexpr int kDownAfterMs = 1000;

  // Empty passwords: no AUTH. `data_password` guards master and replica, `sentinel_password` the sentinels.
  // `data_node_arguments` go to master and replica both (a module to load, say).
  explicit RedisSentinel(std::string data_password = {}, std::string sentinel_password = {},
                         std::vector<std::string> data_node_arguments = {})
      : data_password_(std::move(data_password)),
        sentinel_password_(std::move(sentinel_password)),
        data_node_arguments_(std::move(data_node_arguments)),
        directory_(makeDirectory()) {
    try {
      nodes_.push_back(std::make_unique<RedisServer>(dataNodeArguments("master")));
      std::vector<std::string> replica = dataNodeArguments("replica");
      replica.insert(replica.end(), {"--replicaof", "127.0.0.1", std::to_string(nodes_[0]->port())});
      nodes_.push_back(std::make_unique<RedisServer>(replica));
      for (int i = 0; i < kSentinels; ++i) startSentinel(nodes_[0]->port());
      waitUntilWatching(nodes_[0]->port(), nodes_[1]->port());
    } catch (...) {
      stopAll();
      throw;
    }
  }

  ~RedisSentinel() { stopAll(); }
  RedisSentinel(const RedisSentinel&) = delete;
  RedisSentinel& operator=(const RedisSentinel&) = delete;

  std::vector<swl::Address> sentinels() const {
    std::vector<swl::Address> addresses;
    for (const auto& sentinel : sentinels_) addresses.push_back({"127.0.0.1", sentinel->port});
    return addresses;
  }

  // Options that reach this deployment with the right passwords, and the library's own timeouts: what
  // the client under test uses (the harness's admin connections below are patient).
  swl::SentinelOptions options() const {
    swl::SentinelOptions options;
    options.sentinel.password = sentinel_password_;
    options.master.password = data_password_;
    return options;
  }

  int firstMasterPort() const { return nodes_[0]->port(); }
  int firstReplicaPort() const { return nodes_[1]->port(); }
  RedisServer& node(int port) {
    for (auto& node : nodes_) {
      if (node->port() == port) return *node;
    }
    throw std::runtime_error("no data node on port " + std::to_string(port));
  }

  // Admin connections are patient: a loaded machine must not fail a test on the library's defaults.
  swl::Connection connectToNode(int port) const {
    swl::ConnectionOptions options = patient();
    options.password = data_password_;
    return swl::Connection::tcp("127.0.0.1", port, options);
  }

  swl::Connection connectToSentinel(int index) const {
    swl::ConnectionOptions options = patient();
    options.password = sentinel_password_;
    return swl::Connection::tcp("127.0.0.1", sentinels_[index]->port, options);
  }

  // The master's port as one sentinel names it; 0 when it names none.
  int masterPortSeenBy(int sentinel) const {
    auto connection = connectToSentinel(sentinel);
    const swl::Reply reply = connection.command({"SENTINEL", "get-master-addr-by-name", kMasterName});
    if (!reply->isArray() || reply->size() != 2) return 0;
    return std::stoi(std::string((*reply)[1].text()));
  }

  // Waits until every sentinel names the master on `port`.
  void waitUntilMasterIs(int port, std::chrono::seconds patience) const {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    for (;;) {
      bool agreed = true;
      for (int i = 0; i < kSentinels && agreed; ++i) agreed = masterPortSeenBy(i) == port;
      if (agreed) return;
      if (std::chrono::steady_clock::now() >= deadline) {
        throw std::runtime_error("the sentinels did not name the master on port " + std::to_string(port) + " within " +
                                 std::to_string(patience.count()) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // Waits until the replica has every write the master on `master_port` acknowledged so far.
  void waitUntilReplicated(int master_port) const {
    auto master = connectToNode(master_port);
    if (integerReply(master, {"WAIT", "1", "5000"}) != 1) {
      throw std::runtime_error("the replica of " + std::to_string(master_port) + " did not acknowledge in 5 s");
    }
  }

 private:
  struct Sentinel {
    int port = 0;
    ChildProcess process;
  };

  static std::filesystem::path makeDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "swl-sentinel-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a directory for the sentinels");
    return pattern;
  }

  std::vector<std::string> dataNodeArguments(const std::string& name) const {
    // A replica saves what it receives as dump.rdb, which a server started later in the same directory
    // would load: each node gets a directory of its own.
    const std::filesystem::path directory = directory_ / name;
    std::filesystem::create_directory(directory);
    // Replicas sync at once, not after the default 5 s wait.
    std::vector<std::string> arguments{"--dir", directory.string(), "--repl-diskless-sync-delay", "0"};
    if (!data_password_.empty()) {
      // Both need masterauth: after a failover the old master replicates from the new one.
      arguments.insert(arguments.end(), {"--requirepass", data_password_, "--masterauth", data_password_});
    }
    arguments.insert(arguments.end(), data_node_arguments_.begin(), data_node_arguments_.end());
    return arguments;
  }

  void startSentinel(int master_port) {
    for (int attempt = 1;; ++attempt) {
      auto sentinel = std::make_unique<Sentinel>();
      sentinel->port = RedisServer::freeLoopbackPort();
      const std::filesystem::path config = directory_ / ("sentinel-" + std::to_string(sentinel->port) + ".conf");
      writeConfig(config, sentinel->port, master_port);
      sentinel->process.start({"redis-server", config.string(), "--sentinel"});
      if (answers(*sentinel)) {
        sentinels_.push_back(std::move(sentinel));
        return;
      }
      // Another process may have taken the free port before the sentinel bound it: try another.
      if (attempt == 3) throw std::runtime_error("a sentinel did not start, see " + directory_.string());
    }
  }

  void writeConfig(const std::filesystem::path& path, int port, int master_port) const {
    std::ofstream config(path);
    config << "port " << port << "\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n"
           << "logfile \"" << (directory_ / ("sentinel-" + std::to_string(port) + ".log")).string() << "\"\n"
           << "dir \"" << directory_.string() << "\"\n"
           << "sentinel resolve-hostnames no\n"
           << "sentinel monitor " << kMasterName << " 127.0.0.1 " << master_port << " 2\n"
           << "sentinel down-after-milliseconds " << kMasterName << ' ' << kDownAfterMs << '\n'
           << "sentinel failover-timeout " << kMasterName << " 3000\n"
           << "sentinel parallel-syncs " << kMasterName << " 1\n";
    if (!data_password_.empty()) config << "sentinel auth-pass " << kMasterName << ' ' << data_password_ << '\n';
    // A sentinel also greets its peers with its own requirepass.
    if (!sentinel_password_.empty()) config << "requirepass " << sentinel_password_ << '\n';
    if (!config) throw std::runtime_error("cannot write " + path.string());
  }

  bool answers(Sentinel& sentinel) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline && sentinel.process.alive()) {
      try {
        swl::ConnectionOptions options = patient();
        options.password = sentinel_password_;
        swl::Connection::tcp("127.0.0.1", sentinel.port, options).ping();
        return true;
      } catch (const swl::ConnectionError&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    sentinel.process.stop();
    return false;
  }

  // Every sentinel knows the replica (in sync, not down) and the two other sentinels: only then can
  // they agree that the master is down and elect one of them to fail over.
  void waitUntilWatching(int master_port, int replica_port) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::string why;
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        why = notWatching(master_port, replica_port);
        if (why.empty()) return;
      } catch (const std::exception& error) {
        why = error.what();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("the test sentinels did not get ready: " + why);
  }

  std::string notWatching(int master_port, int replica_port) const {
    auto replica = connectToNode(replica_port);
    if (textReply(replica, {"INFO", "replication"}).find("master_link_status:up") == std::string::npos) {
      return "the replica is not in sync";
    }
    for (int i = 0; i < kSentinels; ++i) {
      if (masterPortSeenBy(i) != master_port) return "sentinel " + std::to_string(i) + " names another master";
      auto sentinel = connectToSentinel(i);
      const auto replicas = instances(sentinel, "replicas");
      if (replicas.size() != 1 || replicas[0].at("port") != std::to_string(replica_port) ||
          replicas[0].at("flags") != "slave" || replicas[0].at("master-link-status") != "ok") {
        return "sentinel " + std::to_string(i) + " does not see the replica in sync";
      }
      if (instances(sentinel, "sentinels").size() != kSentinels - 1) {
        return "sentinel " + std::to_string(i) + " does not know the other sentinels yet";
      }
    }
    return {};
  }

  // SENTINEL replicas|sentinels <name>: one field -> value map per instance.
  static std::vector<std::map<std::string, std::string>> instances(swl::Connection& sentinel, std::string_view kind) {
    const swl::Reply reply = sentinel.command({"SENTINEL", kind, kMasterName});
    if (!reply->isArray()) {
      throw std::runtime_error("SENTINEL " + std::string(kind) + ": " + std::string(reply->text()));
    }
    std::vector<std::map<std::string, std::string>> result;
    for (std::size_t i = 0; i < reply->size(); ++i) {
      const swl::ReplyView fields = (*reply)[i];
      std::map<std::string, std::string>& instance = result.emplace_back();
      for (std::size_t j = 0; j + 1 < fields.size(); j += 2) {
        instance[std::string(fields[j].text())] = std::string(fields[j + 1].text());
      }
    }
    return result;
  }

  void stopAll() {
    // Sentinels first, so that none reconfigures a data node while it stops.
    sentinels_.clear();
    nodes_.clear();
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

  std::string data_password_;
  std::string sentinel_password_;
  std::vector<std::string> data_node_arguments_;
  std::filesystem::path directory_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::unique_ptr<Sentinel>> sentinels_;
};

}  // namespace swl::test
