// The Redis client swl-ratelimit's settings describe: a pool of connections to one server, a
// Sentinel-watched master, or a Cluster, each connection greeted alike.

#include <ratelimit/settings/redis.hpp>

#include <swl/redis/cluster_connection.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/connection_pool.hpp>
#include <swl/redis/sentinel_connection.hpp>

#include <chrono>
#include <memory>
#include <utility>

namespace swl::ratelimit {

std::unique_ptr<RedisClient> connectRedis(const RedisSettings& redis) {
  // A call waits this long for a free connection before the failure mode answers it.
  const PoolOptions pool{redis.pool_size, std::chrono::milliseconds(1000)};
  switch (redis.topology) {
    case RedisTopology::sentinel: {
      SentinelOptions options;
      options.master = redis.connection;
      options.sentinel = redis.connection;
      options.sentinel.user = redis.sentinel_user;
      options.sentinel.password = redis.sentinel_password;
      options.sentinel.db = 0;
      options.pool = pool;
      return std::make_unique<SentinelConnection>(redis.addresses, redis.master_name, std::move(options));
    }
    case RedisTopology::cluster: {
      ClusterOptions options;
      options.connection = redis.connection;
      options.pool = pool;
      return std::make_unique<ClusterConnection>(redis.addresses, std::move(options));
    }
    case RedisTopology::single:
      break;
  }
  const Address address = redis.addresses.front();
  const ConnectionOptions options = redis.connection;
  return std::make_unique<ConnectionPool>(
      [&] {
        return address.unix_path.empty() ? Connection::tcp(address.host, address.port, options)
                                         : Connection::unixSocket(address.unix_path, options);
      },
      pool);
}

}  // namespace swl::ratelimit
