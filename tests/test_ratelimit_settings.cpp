// swl-ratelimit's flags and their environment variables, read into Settings without starting anything;
// the server's own tests (test_ratelimit_service.cpp) start it on each kind of Redis.

#include <ratelimit/settings.hpp>

#include <swl/detail/io/tls.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

namespace {

using Catch::Matchers::Contains;
using swl::ratelimit::readSettings;
using swl::ratelimit::RedisTopology;
using swl::ratelimit::Settings;
using swl::ratelimit::SettingsError;

// Settings from `arguments` (after --config) and a made-up environment.
Settings read(std::vector<std::string> arguments, const std::map<std::string, std::string>& environment = {}) {
  arguments.insert(arguments.begin(), {"--config", "/etc/ratelimit"});
  return readSettings(arguments, [&](const char* name) -> const char* {
    const auto found = environment.find(name);
    return found == environment.end() ? nullptr : found->second.c_str();
  });
}

}  // namespace

TEST_CASE("swl-ratelimit's settings default to one Redis on localhost, open on failure, as envoyproxy's server does") {
  const Settings settings = read({});
  CHECK(settings.config == "/etc/ratelimit");
  CHECK(settings.listen == "0.0.0.0:8081");
  CHECK(settings.redis.topology == RedisTopology::single);
  REQUIRE(settings.redis.addresses.size() == 1);
  CHECK(settings.redis.addresses[0].endpoint() == "127.0.0.1:6379");
  CHECK(settings.on_failure == swl::FailurePolicy::allow);
  CHECK(settings.redis.pool_size == 1);
  CHECK(settings.key_prefix == "swlrl");
  CHECK_FALSE(settings.redis.connection.tls.enabled);
}

TEST_CASE("swl-ratelimit reads every Redis flag into the connection's options") {
  const Settings settings = read({"--redis",
                                  "[::1]:7000",
                                  "--redis-user",
                                  "limiter",
                                  "--redis-db",
                                  "3",
                                  "--redis-timeout",
                                  "120",
                                  "--redis-connect-timeout",
                                  "900",
                                  "--redis-tls",
                                  "yes",
                                  "--redis-tls-ca",
                                  "/ca.pem",
                                  "--redis-tls-cert",
                                  "/client.pem",
                                  "--redis-tls-key",
                                  "/client.key",
                                  "--redis-tls-server-name",
                                  "redis.internal",
                                  "--pool-size",
                                  "16",
                                  "--failure-mode",
                                  "closed",
                                  "--key-prefix",
                                  "rl",
                                  "--metrics",
                                  "0.0.0.0:9090"});
  CHECK(settings.redis.addresses[0].host == "::1");
  CHECK(settings.redis.addresses[0].port == 7000);
  const swl::ConnectionOptions& connection = settings.redis.connection;
  CHECK(connection.user == "limiter");
  CHECK(connection.db == 3);
  CHECK(connection.command_timeout == std::chrono::milliseconds(120));
  CHECK(connection.connect_timeout == std::chrono::milliseconds(900));
  CHECK(connection.tls.enabled);
  CHECK(connection.tls.ca_file == "/ca.pem");
  CHECK(connection.tls.cert_file == "/client.pem");
  CHECK(connection.tls.key_file == "/client.key");
  CHECK(connection.tls.server_name == "redis.internal");
  CHECK(settings.redis.pool_size == 16);
  CHECK(settings.on_failure == swl::FailurePolicy::deny);
  CHECK(settings.key_prefix == "rl");
  CHECK(settings.metrics == "0.0.0.0:9090");
  CHECK(read({"--listen", "127.0.0.1:0"}).listen == "127.0.0.1:0");  // the OS picks the port
  CHECK(read({"--redis", "unix:/run/redis.sock"}).redis.addresses[0].unix_path == "/run/redis.sock");
}

TEST_CASE("swl-ratelimit reads Sentinels and Cluster seeds as envoyproxy/ratelimit's REDIS_URL lists them") {
  const Settings sentinel = read({"--redis-sentinel", "mymaster,10.0.0.1:26379,10.0.0.2:26380"});
  CHECK(sentinel.redis.topology == RedisTopology::sentinel);
  CHECK(sentinel.redis.master_name == "mymaster");
  REQUIRE(sentinel.redis.addresses.size() == 2);
  CHECK(sentinel.redis.addresses[1].endpoint() == "10.0.0.2:26380");

  const Settings cluster = read({"--redis-cluster", "10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:7002"});
  CHECK(cluster.redis.topology == RedisTopology::cluster);
  REQUIRE(cluster.redis.addresses.size() == 3);
  CHECK(cluster.redis.addresses[2].endpoint() == "10.0.0.3:7002");
}

TEST_CASE("swl-ratelimit takes each flag from its variable too, and a flag wins over its variable") {
  const std::map<std::string, std::string> environment{{"SWL_RATELIMIT_REDIS_PASSWORD", "secret"},
                                                       {"SWL_RATELIMIT_POOL_SIZE", "4"},
                                                       {"SWL_RATELIMIT_REDIS_TLS_CA", "/env-ca.pem"},
                                                       {"SWL_RATELIMIT_REDIS", "10.0.0.9:6380"}};
  const Settings from_environment = read({}, environment);
  CHECK(from_environment.redis.connection.password == "secret");
  CHECK(from_environment.redis.pool_size == 4);
  CHECK(from_environment.redis.connection.tls.ca_file == "/env-ca.pem");
  CHECK(from_environment.redis.addresses[0].endpoint() == "10.0.0.9:6380");

  const Settings both = read({"--pool-size", "12", "--redis-cluster", "10.0.0.1:7000"}, environment);
  CHECK(both.redis.pool_size == 12);
  // The command line's way to Redis replaces the environment's, rather than contradicting it.
  CHECK(both.redis.topology == RedisTopology::cluster);
  CHECK(both.redis.addresses[0].endpoint() == "10.0.0.1:7000");
  CHECK(both.redis.connection.password == "secret");
}

TEST_CASE("swl-ratelimit refuses a wrong flag or variable with a SettingsError that names it") {
  const auto refused = [](std::vector<std::string> arguments, const std::string& named,
                          const std::map<std::string, std::string>& environment = {}) {
    INFO(named);
    CHECK_THROWS_MATCHES(read(std::move(arguments), environment), SettingsError, Catch::Message(named));
  };
  refused({"--redis-port", "6379"}, "swl-ratelimit: unknown flag --redis-port");
  refused({"--redis"}, "swl-ratelimit: --redis needs a value");
  refused({"--redis", "localhost"}, "swl-ratelimit: --redis localhost: expected HOST:PORT");
  refused({"--redis", "localhost:0"}, "swl-ratelimit: --redis localhost:0: expected a port from 1 to 65535");
  refused({"--redis", "localhost:70000"}, "swl-ratelimit: --redis localhost:70000: expected a port from 1 to 65535");
  refused({"--redis", "localhost:6379", "--redis-sentinel", "m,10.0.0.1:26379"},
          "swl-ratelimit: --redis and --redis-sentinel both say where Redis is; give one");
  refused({}, "swl-ratelimit: SWL_RATELIMIT_REDIS and SWL_RATELIMIT_REDIS_CLUSTER both say where Redis is; give one",
          {{"SWL_RATELIMIT_REDIS", "a:1"}, {"SWL_RATELIMIT_REDIS_CLUSTER", "b:2"}});
  refused(
      {"--redis-sentinel", "mymaster"},
      "swl-ratelimit: --redis-sentinel mymaster: expected the master's name, then at least one Sentinel's HOST:PORT");
  refused({"--redis-cluster", "10.0.0.1:7000,unix:/run/redis.sock"},
          "swl-ratelimit: --redis-cluster unix:/run/redis.sock: expected HOST:PORT; a unix socket serves one server "
          "only");
  refused({"--redis-cluster", "10.0.0.1:7000", "--redis-db", "2"},
          "swl-ratelimit: --redis-db 2: a Cluster has only database 0");
  refused({"--redis-tls", "maybe"}, "swl-ratelimit: --redis-tls maybe: expected yes or no");
  refused({"--pool-size", "0"}, "swl-ratelimit: --pool-size 0: expected a whole number from 1 to 4096");
  refused({"--redis-timeout", "50ms"},
          "swl-ratelimit: --redis-timeout 50ms: expected a whole number from 1 to 3600000");
  refused({"--failure-mode", "half"}, "swl-ratelimit: --failure-mode half: expected open or closed");
  refused({"--key-prefix", "rl{x}"}, "swl-ratelimit: --key-prefix \"rl{x}\": expected a prefix, without braces");
  refused({}, "swl-ratelimit: SWL_RATELIMIT_POOL_SIZE many: expected a whole number from 1 to 4096",
          {{"SWL_RATELIMIT_POOL_SIZE", "many"}});
  CHECK_THROWS_MATCHES(readSettings({}, [](const char*) -> const char* { return nullptr; }), SettingsError,
                       Catch::Message("swl-ratelimit: no --config (or SWL_RATELIMIT_CONFIG)"));
}

TEST_CASE("swl-ratelimit's usage text lists every flag with its default") {
  const std::string usage = swl::ratelimit::usageText();
  for (const char* flag : {"--config PATH", "--redis HOST:PORT|unix:PATH", "--redis-sentinel MASTER,HOST:PORT",
                           "--redis-cluster HOST:PORT", "--redis-tls yes|no", "--failure-mode open|closed",
                           "--pool-size N", "--metrics HOST:PORT"}) {
    CHECK_THAT(usage, Contains(flag));
  }
  CHECK_THAT(usage, Contains("while Redis cannot answer; default open"));
}

TEST_CASE("swl-ratelimit's usage text gives the defaults the settings take") {
  // Each default is written twice, in Settings and in the flag's line: the two must not drift apart.
  const std::string usage = swl::ratelimit::usageText();
  const Settings settings = read({});
  CHECK_THAT(usage, Contains("wait together; default " + std::to_string(settings.redis.pool_size) + "\n"));
  CHECK_THAT(usage, Contains("starts with; default " + settings.key_prefix + "\n"));
  CHECK_THAT(usage, Contains("; default " + settings.listen + "\n"));
  CHECK(settings.on_failure == swl::FailurePolicy::allow);  // "default open", above
}

TEST_CASE("swl-ratelimit's Redis client is made for each topology without dialling, and TLS only where swl has it") {
  Settings settings = read({"--redis", "127.0.0.1:1"});
  CHECK(swl::ratelimit::connectRedis(settings.redis) != nullptr);
  settings = read({"--redis-sentinel", "mymaster,127.0.0.1:1"});
  CHECK(swl::ratelimit::connectRedis(settings.redis) != nullptr);
  settings = read({"--redis-cluster", "127.0.0.1:1"});
  CHECK(swl::ratelimit::connectRedis(settings.redis) != nullptr);

  settings = read({"--redis", "127.0.0.1:1", "--redis-tls", "yes", "--redis-tls-ca", "/nonexistent/ca.pem"});
  if (swl::detail::kTlsAvailable) {
    CHECK_THROWS_WITH(swl::ratelimit::connectRedis(settings.redis), Contains("/nonexistent/ca.pem"));
  } else {
    CHECK_THROWS_AS(swl::ratelimit::connectRedis(settings.redis), swl::InvalidArgument);
    CHECK_THROWS_WITH(swl::ratelimit::connectRedis(settings.redis), Contains("hiredis >= 1.0"));
  }
}
