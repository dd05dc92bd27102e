#pragma once
/// \file
/// Where swl-ratelimit's counters live, as its settings say (one server, a master Sentinels watch, or a
/// Cluster; TLS on any of them), and the Redis client made of that.

#include <swl/connection_options.hpp>
#include <swl/redis/client.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace swl::ratelimit {

/// Redis's own port: the default server's, and a redis:// URL's that names none.
inline constexpr int kRedisPort = 6379;

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
  std::vector<Address> addresses{{"127.0.0.1", kRedisPort}};
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

/// The client `redis` describes, nothing dialled yet (the first call dials). TLS asked of a build
/// without it (swl built against hiredis 0.14) is an InvalidArgument that says so.
std::unique_ptr<RedisClient> connectRedis(const RedisSettings& redis);

}  // namespace swl::ratelimit
