#pragma once
/// \file
/// How swl-ratelimit is run: its flags and their environment variables, and envoyproxy/ratelimit's own
/// variables (so that a manifest written for that server runs this one), read into Settings; and the
/// Redis client they describe (one server, a master Sentinel watches, or a Cluster; TLS on any of them).
/// One table of flags (settings.cpp) gives the parser, the variables' names and the usage text; another
/// says what becomes of each of envoyproxy/ratelimit's variables: applied, ignored (and why), or refused.
/// Reading settings does no I/O: every file they name is opened later, by what uses it.

#include <ratelimit/config/source.hpp>
#include <ratelimit/decide/options.hpp>
#include <ratelimit/telemetry/log.hpp>

#include <swl/connection_options.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>
#include <swl/redis/client.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
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
  /// The Sentinels' own ACL user and password (their requirepass), apart from the master's.
  std::string sentinel_user;
  std::string sentinel_password;
  /// Connections to the server or the master; per master on a Cluster. As many threads serve gRPC, each
  /// deciding the calls that wait together in one round trip: one serves tens of thousands of calls a
  /// second, and more pay off only with cores to spare (bench/README.md measures 1 and 2).
  std::size_t pool_size = 1;
};

/// Everything the server is told at start.
struct Settings {
  /// Where the configuration is read from: --config, or envoyproxy/ratelimit's runtime directory when its
  /// variables give it and --config does not; MERGE_DOMAIN_CONFIG.
  ConfigSource source;
  /// Whether a change of the configuration's files reloads it, as SIGHUP does. Unset: yes with `runtime`
  /// (envoyproxy/ratelimit always watches), no with --config (whose operators send SIGHUP).
  std::optional<bool> watch;
  /// The gRPC address: HOST:PORT, or unix:PATH.
  std::string listen = "0.0.0.0:8081";
  /// HOST:PORT for /healthcheck and /json; none when empty.
  std::string http;
  RedisSettings redis;
  /// How requests are decided: the key prefix, the failure mode, SHADOW_MODE, QUOTA_MODE and the
  /// LIMIT_* headers.
  DeciderOptions decider;
  std::string metrics;  ///< HOST:PORT for Prometheus's metrics; none when empty
  std::string metrics_path = "/metrics";
  /// HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: /healthcheck fails while the configuration in force has no
  /// domain.
  bool healthy_only_with_a_domain = false;
  /// GRPC_MAX_CONNECTION_AGE and its _GRACE: how long a client's connection may live, so that clients
  /// spread over new replicas; none when not given.
  std::optional<std::chrono::milliseconds> grpc_max_connection_age;
  std::optional<std::chrono::milliseconds> grpc_max_connection_age_grace;
  LogLevel log_level = LogLevel::info;
  LogFormat log_format = LogFormat::text;
  /// envoyproxy/ratelimit's variables that were given and do nothing here, each with why: for the log.
  std::vector<std::string> ignored;
};

/// Reads envoyproxy/ratelimit's variables, then the environment's SWL_RATELIMIT_* variables (both through
/// `variable`, which returns null for one not set), then `arguments` (argv without the program's name:
/// `--flag value` pairs): a flag wins over its variable, and ours over envoyproxy's. Anything wrong,
/// and any of envoyproxy's settings that would change what clients or operators get and that this server
/// cannot do, is a SettingsError naming the flag or variable and saying why.
Settings readSettings(const std::vector<std::string>& arguments,
                      const std::function<const char*(const char*)>& variable);

/// The flags, their variables and defaults, one line each: what --help and a wrong flag print.
std::string usageText();

/// The client `redis` describes, nothing dialled yet (the first call dials). TLS asked of a build
/// without it (swl built against hiredis 0.14) is an InvalidArgument that says so.
std::unique_ptr<RedisClient> connectRedis(const RedisSettings& redis);

}  // namespace swl::ratelimit
