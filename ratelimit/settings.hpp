#pragma once
/// \file
/// How swl-ratelimit is run: its flags and their environment variables, read into Settings, and the
/// Redis client they describe (one server, a master Sentinel watches, or a Cluster; TLS on any of them).
/// One table of flags (settings.cpp) gives the parser, the variables' names and the usage text.

#include <swl/connection_options.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>
#include <swl/redis/client.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace swl::ratelimit {

/// A flag or variable that is wrong: its message names it and says what it takes.
class SettingsError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// How the counters' Redis is deployed.
enum class RedisTopology {
  single,    ///< one server (`--redis`)
  sentinel,  ///< the master a group of Sentinels watches, followed through failovers (`--redis-sentinel`)
  cluster,   ///< a Redis Cluster, found from its seed nodes (`--redis-cluster`)
};

/// Where the counters live, and how every connection reaches and greets it.
struct RedisSettings {
  RedisTopology topology = RedisTopology::single;
  /// The server, the Sentinels, or the Cluster's seed nodes.
  std::vector<Address> addresses{{"127.0.0.1", 6379}};
  /// The name the Sentinels know the master by.
  std::string master_name;
  /// For the server, the master or every Cluster node: timeouts, user, password, db, TLS.
  ConnectionOptions connection;
  /// The Sentinels' own password (their requirepass), apart from the master's.
  std::string sentinel_password;
  /// Connections to the server or the master; per master on a Cluster. As many threads serve gRPC, each
  /// deciding the calls that wait together in one round trip: one serves tens of thousands of calls a
  /// second, and more pay off only with cores to spare (bench/README.md measures 1 and 2).
  std::size_t pool_size = 1;
};

/// Everything the server is told at start.
struct Settings {
  std::filesystem::path config;
  std::string listen = "0.0.0.0:8081";
  RedisSettings redis;
  FailurePolicy on_failure = FailurePolicy::allow;
  std::string key_prefix = "swlrl";
  std::string metrics;  ///< HOST:PORT for /metrics; none when empty
};

/// Reads the environment's SWL_RATELIMIT_* variables (through `variable`, which returns null for one not
/// set), then `arguments` (argv without the program's name: `--flag value` pairs); a flag wins over its
/// variable. Anything wrong is a SettingsError naming the flag or variable.
Settings readSettings(const std::vector<std::string>& arguments,
                      const std::function<const char*(const char*)>& variable);

/// The flags, their variables and defaults, one line each: what --help and a wrong flag print.
std::string usageText();

/// The client `redis` describes, nothing dialled yet (the first call dials). TLS asked of a build
/// without it (swl built against hiredis 0.14) is an InvalidArgument that says so.
std::unique_ptr<RedisClient> connectRedis(const RedisSettings& redis);

}  // namespace swl::ratelimit
