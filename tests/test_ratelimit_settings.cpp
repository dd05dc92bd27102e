// swl-ratelimit's flags and their environment variables, and envoyproxy/ratelimit's variables, read
// into Settings without starting anything; the server's own tests (test_ratelimit_service.cpp,
// test_ratelimit_operations.cpp) start it on each kind of Redis, and with envoyproxy's variables alone.

#include <ratelimit/settings/go_values.hpp>
#include <ratelimit/settings/settings.hpp>

#include <swl/detail/io/tls.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using Catch::Matchers::Contains;
using swl::ratelimit::readSettings;
using swl::ratelimit::RedisTopology;
using swl::ratelimit::Settings;
using swl::ratelimit::SettingsError;

using Environment = std::map<std::string, std::string>;

// Settings from `arguments` alone and a made-up environment.
Settings readOnly(const std::vector<std::string>& arguments, const Environment& environment) {
  return readSettings(arguments, [&](const char* name) -> const char* {
    const auto found = environment.find(name);
    return found == environment.end() ? nullptr : found->second.c_str();
  });
}

// Settings from `arguments` (after --config) and a made-up environment.
Settings read(std::vector<std::string> arguments, const Environment& environment = {}) {
  arguments.insert(arguments.begin(), {"--config", "/etc/ratelimit"});
  return readOnly(arguments, environment);
}

// Settings from envoyproxy/ratelimit's variables, with its runtime directory giving the configuration
// (no --config), as a manifest written for it has them.
Settings readEnvoy(Environment environment, const std::vector<std::string>& arguments = {}) {
  environment.emplace("RUNTIME_ROOT", "/data");
  environment.emplace("RUNTIME_SUBDIRECTORY", "ratelimit");
  environment.emplace("REDIS_SOCKET_TYPE", "tcp");
  environment.emplace("REDIS_URL", "redis.internal:6379");
  return readOnly(arguments, environment);
}

// envoyproxy's variables that stop the server: the message, exactly.
void refusedByEnvoy(const Environment& environment, const std::string& message) {
  INFO(message);
  CHECK_THROWS_MATCHES(readEnvoy(environment), SettingsError, Catch::Message(message));
}

bool mentions(const std::vector<std::string>& lines, const std::string& start) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return line.rfind(start, 0) == 0; });
}

}  // namespace

TEST_CASE("swl-ratelimit's settings default to one Redis on localhost, open on failure, as envoyproxy's server does") {
  const Settings settings = read({});
  CHECK(settings.source.path == "/etc/ratelimit");
  CHECK(settings.grpc.listen == "0.0.0.0:8081");
  CHECK(settings.redis.topology == RedisTopology::single);
  REQUIRE(settings.redis.addresses.size() == 1);
  CHECK(settings.redis.addresses[0].endpoint() == "127.0.0.1:6379");
  CHECK(settings.decider.on_failure == swl::FailurePolicy::allow);
  CHECK(settings.redis.pool_size == 1);
  CHECK(settings.decider.key_prefix == "swlrl");
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
  CHECK(settings.decider.on_failure == swl::FailurePolicy::deny);
  CHECK(settings.decider.key_prefix == "rl");
  CHECK(settings.metrics == "0.0.0.0:9090");
  CHECK(read({"--listen", "127.0.0.1:0"}).grpc.listen == "127.0.0.1:0");  // the OS picks the port
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
                       Catch::Message("swl-ratelimit: no configuration: give --config (or SWL_RATELIMIT_CONFIG), or "
                                      "envoyproxy/ratelimit's RUNTIME_ROOT and RUNTIME_SUBDIRECTORY, or "
                                      "CONFIG_TYPE=GRPC_XDS_SOTW and CONFIG_GRPC_XDS_SERVER_URL"));
  refused({"--http", "localhost"}, "swl-ratelimit: --http localhost: expected HOST:PORT");
  refused({"--watch", "often"}, "swl-ratelimit: --watch often: expected yes or no");
  refused({"--log-level", "loud"},
          "swl-ratelimit: --log-level loud: expected error, warn, info or debug (or panic, fatal, warning, trace)");
  refused({"--log-format", "xml"}, "swl-ratelimit: --log-format xml: expected text or json");
  refused({"--metrics-path", "metrics"}, "swl-ratelimit: --metrics-path metrics: expected a path that starts with /");
}

TEST_CASE("swl-ratelimit's usage text lists every flag with its default") {
  const std::string usage = swl::ratelimit::usageText();
  for (const char* flag : {"--config PATH", "--redis HOST:PORT|unix:PATH", "--redis-sentinel MASTER,HOST:PORT",
                           "--redis-cluster HOST:PORT", "--redis-tls yes|no", "--failure-mode open|closed",
                           "--pool-size N", "--metrics HOST:PORT", "--http HOST:PORT", "--watch yes|no",
                           "--log-level error|warn|info|debug", "--log-format text|json", "--metrics-path PATH",
                           "--redis-sentinel-user NAME", "--listen HOST:PORT|unix:PATH"}) {
    CHECK_THAT(usage, Contains(flag));
  }
  CHECK_THAT(usage, Contains("while Redis cannot answer; default open"));
  CHECK_THAT(usage, Contains("envoyproxy/ratelimit's variables (REDIS_URL, RUNTIME_ROOT, PORT, ...)"));
}

TEST_CASE("swl-ratelimit's usage text gives the defaults the settings take") {
  // Each default is written once, where its field is declared, and the flag's line shows it from there.
  const std::string usage = swl::ratelimit::usageText();
  const Settings settings = read({});
  CHECK_THAT(usage, Contains("wait together; default " + std::to_string(settings.redis.pool_size) + "\n"));
  CHECK_THAT(usage, Contains("starts with; default " + settings.decider.key_prefix + "\n"));
  CHECK_THAT(usage, Contains("; default " + settings.grpc.listen + "\n"));
  CHECK_THAT(usage, Contains("metrics are served; default " + settings.metrics_path + "\n"));
  CHECK_THAT(usage, Contains("how much the log says; default info\n"));
  CHECK(settings.log.level == swl::ratelimit::LogLevel::info);
  CHECK(settings.decider.on_failure == swl::FailurePolicy::allow);  // "default open", above
  CHECK(settings.http.empty());                                     // "else none"
  CHECK_FALSE(settings.watch.has_value());                          // "no with --config"
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

TEST_CASE("envoyproxy/ratelimit's booleans read as Go's strconv.ParseBool reads them, and nothing else") {
  using swl::ratelimit::parseGoBool;
  for (const char* yes : {"1", "t", "T", "TRUE", "true", "True"}) CHECK(parseGoBool(yes) == true);
  for (const char* no : {"0", "f", "F", "FALSE", "false", "False"}) CHECK(parseGoBool(no) == false);
  for (const char* neither : {"", "yes", "no", "on", "tRUE", " true", "2"}) CHECK_FALSE(parseGoBool(neither));
}

TEST_CASE("envoyproxy/ratelimit's durations read as Go's time.ParseDuration reads them, to the nanosecond") {
  using namespace std::chrono_literals;
  using swl::ratelimit::parseGoDuration;
  CHECK(parseGoDuration("10s") == 10s);
  CHECK(parseGoDuration("150ms") == 150ms);
  CHECK(parseGoDuration("150us") == 150us);
  CHECK(parseGoDuration("150\xC2\xB5s") == 150us);  // the micro sign
  CHECK(parseGoDuration("150\xCE\xBCs") == 150us);  // the Greek mu
  CHECK(parseGoDuration("42ns") == 42ns);
  CHECK(parseGoDuration("2h45m") == 2h + 45min);
  CHECK(parseGoDuration("1h1m1s1ms") == 1h + 1min + 1s + 1ms);
  CHECK(parseGoDuration("1.5h") == 90min);
  CHECK(parseGoDuration(".5s") == 500ms);
  CHECK(parseGoDuration("1.s") == 1s);
  CHECK(parseGoDuration("-1.5m") == -90s);
  CHECK(parseGoDuration("+3s") == 3s);
  CHECK(parseGoDuration("0") == 0s);
  CHECK(parseGoDuration("-0") == 0s);
  CHECK(parseGoDuration("0s") == 0s);
  CHECK(parseGoDuration("1.0000000001s") == 1s);  // beyond the nanosecond: dropped
  CHECK(parseGoDuration("9223372036854775807ns") == std::chrono::nanoseconds(INT64_MAX));
  CHECK(parseGoDuration("-9223372036854775808ns") == std::chrono::nanoseconds(INT64_MIN));
  CHECK(parseGoDuration("2562047h") == 2562047h);
  for (const char* wrong : {"", "10", "s", ".s", "-", "1x", "1 s", "1S", "1.5", "h1", "1h-1m", "9223372036854775808ns",
                            "2562048h", "99999999999999999999s"}) {
    INFO(wrong);
    CHECK_FALSE(parseGoDuration(wrong));
  }
}

TEST_CASE("swl-ratelimit listens where envoyproxy/ratelimit's GRPC_HOST, GRPC_PORT, GRPC_UDS, HOST and PORT say") {
  const Settings given = read({}, {{"GRPC_HOST", "127.0.0.1"}, {"GRPC_PORT", "9081"}, {"PORT", "9080"}});
  CHECK(given.grpc.listen == "127.0.0.1:9081");
  CHECK(given.http == "0.0.0.0:9080");  // HOST's default
  CHECK(read({}, {{"GRPC_PORT", "0"}}).grpc.listen == "0.0.0.0:0");
  CHECK(read({}, {{"GRPC_HOST", "::1"}, {"HOST", "::"}}).grpc.listen == "[::1]:8081");
  CHECK(read({}, {{"HOST", "::"}}).http == "[::]:8080");
  CHECK(read({}, {{"GRPC_UDS", "/run/ratelimit.sock"}, {"GRPC_PORT", "9081"}}).grpc.listen ==
        "unix:/run/ratelimit.sock");
  // With --config and no HOST or PORT there is no HTTP port, as before; envoyproxy's settings always have one.
  CHECK(read({}).http.empty());
  CHECK(readEnvoy({}).http == "0.0.0.0:8080");
  CHECK(readEnvoy({}).grpc.listen == "0.0.0.0:8081");
  // Ours win.
  CHECK(read({"--listen", "127.0.0.1:7000", "--http", "127.0.0.1:7001"}, {{"GRPC_PORT", "9081"}, {"PORT", "9080"}})
            .grpc.listen == "127.0.0.1:7000");
  CHECK(readEnvoy({{"PORT", "9080"}}, {"--http", "127.0.0.1:0"}).http == "127.0.0.1:0");
  CHECK(read({"--listen", "unix:/run/rl.sock"}).grpc.listen == "unix:/run/rl.sock");
}

TEST_CASE("swl-ratelimit reads envoyproxy/ratelimit's REDIS_URL in the format of each REDIS_TYPE") {
  const Settings tcp = read({}, {{"REDIS_SOCKET_TYPE", "tcp"}, {"REDIS_URL", "redis.internal:6380"}});
  CHECK(tcp.redis.topology == RedisTopology::single);
  CHECK(tcp.redis.addresses.at(0).endpoint() == "redis.internal:6380");

  const Settings unix_socket = read({}, {{"REDIS_SOCKET_TYPE", "unix"}, {"REDIS_URL", "/run/redis.sock"}});
  CHECK(unix_socket.redis.addresses.at(0).unix_path == "/run/redis.sock");
  // Its default socket type is unix, and its default REDIS_URL twemproxy's socket.
  CHECK(read({}, {{"REDIS_URL", "/run/redis.sock"}}).redis.addresses.at(0).unix_path == "/run/redis.sock");
  const Settings defaults = readOnly({}, {{"RUNTIME_ROOT", "/data"}, {"RUNTIME_SUBDIRECTORY", "ratelimit"}});
  CHECK(defaults.redis.addresses.at(0).unix_path == "/var/run/nutcracker/ratelimit.sock");

  const Settings url =
      read({}, {{"REDIS_SOCKET_TYPE", "tcp"}, {"REDIS_URL", "redis://limiter:p%40ss@10.0.0.5:6390/2"}});
  CHECK(url.redis.addresses.at(0).endpoint() == "10.0.0.5:6390");
  CHECK(url.redis.connection.user == "limiter");
  CHECK(url.redis.connection.password == "p@ss");
  CHECK(url.redis.connection.db == 2);
  const Settings query =
      read({}, {{"REDIS_SOCKET_TYPE", "tcp"}, {"REDIS_URL", "redis://10.0.0.5?db=3&username=u&password=p"}});
  CHECK(query.redis.addresses.at(0).endpoint() == "10.0.0.5:6379");
  CHECK(query.redis.connection.db == 3);
  CHECK(query.redis.connection.user == "u");
  CHECK(query.redis.connection.password == "p");
  // REDIS_AUTH wins over the URL's user and password.
  const Settings auth = read({}, {{"REDIS_SOCKET_TYPE", "tcp"},
                                  {"REDIS_URL", "redis://limiter:old@10.0.0.5:6390"},
                                  {"REDIS_AUTH", "admin:new:er"}});
  CHECK(auth.redis.connection.user == "admin");
  CHECK(auth.redis.connection.password == "new:er");  // split at the first colon, as Go's strings.Cut
  CHECK(read({}, {{"REDIS_AUTH", "secret"}}).redis.connection.user.empty());
  CHECK(read({}, {{"REDIS_AUTH", "secret"}}).redis.connection.password == "secret");

  const Settings sentinel = read({}, {{"REDIS_TYPE", "SENTINEL"},
                                      {"REDIS_URL", "mymaster,10.0.0.1:26379,10.0.0.2:26379"},
                                      {"REDIS_SENTINEL_AUTH", "watcher:s3cret"}});
  CHECK(sentinel.redis.topology == RedisTopology::sentinel);
  CHECK(sentinel.redis.master_name == "mymaster");
  CHECK(sentinel.redis.addresses.size() == 2);
  CHECK(sentinel.redis.sentinel_user == "watcher");
  CHECK(sentinel.redis.sentinel_password == "s3cret");

  const Settings cluster = read({}, {{"REDIS_TYPE", "Cluster"}, {"REDIS_URL", "10.0.0.1:7000,10.0.0.2:7001"}});
  CHECK(cluster.redis.topology == RedisTopology::cluster);
  CHECK(cluster.redis.addresses.at(1).endpoint() == "10.0.0.2:7001");

  const Settings tls = read({}, {{"REDIS_TLS", "true"},
                                 {"REDIS_TLS_CLIENT_CERT", "/tls/client.pem"},
                                 {"REDIS_TLS_CLIENT_KEY", "/tls/client.key"},
                                 {"REDIS_TLS_CACERT", "/tls/ca.pem"},
                                 {"REDIS_TIMEOUT", "1.5s"}});
  CHECK(tls.redis.connection.tls.enabled);
  CHECK(tls.redis.connection.tls.cert_file == "/tls/client.pem");
  CHECK(tls.redis.connection.tls.key_file == "/tls/client.key");
  CHECK(tls.redis.connection.tls.ca_file == "/tls/ca.pem");
  // REDIS_TIMEOUT is radix's dial timeout: the connect timeout; a decision's own wait stays ours.
  CHECK(tls.redis.connection.connect_timeout == std::chrono::milliseconds(1500));
  CHECK(tls.redis.connection.command_timeout == std::chrono::milliseconds(50));
  CHECK(read({}, {{"REDIS_TIMEOUT", "150us"}}).redis.connection.connect_timeout == std::chrono::milliseconds(1));
  CHECK(read({}, {{"REDIS_TIMEOUT", "0"}}).redis.connection.connect_timeout == std::chrono::milliseconds(0));
  // With the name Redis's certificate holds given, hostname verification is skipped for nothing.
  CHECK(read({"--redis-tls-server-name", "redis.internal"},
             {{"REDIS_TLS", "true"}, {"REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "true"}})
            .redis.connection.tls.server_name == "redis.internal");
  CHECK_FALSE(read({}, {{"REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "true"}}).redis.connection.tls.enabled);
}

TEST_CASE("swl-ratelimit's flags and SWL_RATELIMIT_* variables win over envoyproxy/ratelimit's variables") {
  const Environment envoy{{"REDIS_SOCKET_TYPE", "tcp"},   {"REDIS_URL", "redis.internal:6379"},
                          {"REDIS_AUTH", "envoy-secret"}, {"CACHE_KEY_PREFIX", "envoy:"},
                          {"LOG_LEVEL", "debug"},         {"USE_PROMETHEUS", "true"}};
  const Settings envoys = read({}, envoy);
  CHECK(envoys.redis.addresses.at(0).endpoint() == "redis.internal:6379");
  CHECK(envoys.decider.key_prefix == "envoy:");
  CHECK(envoys.log.level == swl::ratelimit::LogLevel::debug);
  CHECK(envoys.metrics == "0.0.0.0:9090");

  Environment both = envoy;
  both.emplace("SWL_RATELIMIT_REDIS_CLUSTER", "10.0.0.1:7000");
  both.emplace("SWL_RATELIMIT_REDIS_PASSWORD", "ours");
  const Settings ours = read({"--key-prefix", "rl", "--log-level", "warn", "--metrics", "127.0.0.1:9100"}, both);
  CHECK(ours.redis.topology == RedisTopology::cluster);
  CHECK(ours.redis.addresses.at(0).endpoint() == "10.0.0.1:7000");
  CHECK(ours.redis.connection.password == "ours");
  CHECK(ours.decider.key_prefix == "rl");
  CHECK(ours.log.level == swl::ratelimit::LogLevel::warn);
  CHECK(ours.metrics == "127.0.0.1:9100");
}

TEST_CASE("swl-ratelimit finds its files in envoyproxy/ratelimit's runtime directory, unless --config says otherwise") {
  const Settings envoy = readEnvoy({});
  REQUIRE(envoy.source.runtime);
  CHECK(envoy.source.path.empty());
  CHECK(envoy.source.runtime->files() == "/data/ratelimit/config");
  CHECK(envoy.source.runtime->watch_root);
  CHECK_FALSE(envoy.source.runtime->ignore_dot_files);
  CHECK_FALSE(envoy.source.merge_domains);

  const Settings given = readEnvoy({{"RUNTIME_APPDIRECTORY", "rules"},
                                    {"RUNTIME_WATCH_ROOT", "false"},
                                    {"RUNTIME_IGNOREDOTFILES", "T"},
                                    {"MERGE_DOMAIN_CONFIG", "1"}});
  REQUIRE(given.source.runtime);
  CHECK(given.source.runtime->files() == "/data/ratelimit/rules");
  CHECK_FALSE(given.source.runtime->watch_root);
  CHECK(given.source.runtime->ignore_dot_files);
  CHECK(given.source.merge_domains);
  // RUNTIME_ROOT's default, envoyproxy/ratelimit's.
  const Settings root = readOnly({}, {{"RUNTIME_SUBDIRECTORY", "ratelimit"}});
  REQUIRE(root.source.runtime);
  CHECK(root.source.runtime->files() == "/srv/runtime_data/current/ratelimit/config");
  // Without RUNTIME_WATCH_ROOT, no subdirectory is needed: the files are ROOT/APPDIRECTORY.
  const Settings flat = readOnly({}, {{"RUNTIME_ROOT", "/data"}, {"RUNTIME_WATCH_ROOT", "false"}});
  REQUIRE(flat.source.runtime);
  CHECK(flat.source.runtime->files() == "/data/config");

  const Settings config = read({}, {{"RUNTIME_ROOT", "/data"}, {"RUNTIME_SUBDIRECTORY", "ratelimit"}});
  CHECK_FALSE(config.source.runtime);
  CHECK(config.source.path == "/etc/ratelimit");
  CHECK(config.http.empty());
  CHECK(mentions(config.ignored, "RUNTIME_* and CONFIG_TYPE: --config"));
}

TEST_CASE("swl-ratelimit takes envoyproxy/ratelimit's modes, headers, health, log and Prometheus settings") {
  const Settings settings = readEnvoy({{"SHADOW_MODE", "true"},
                                       {"QUOTA_MODE", "1"},
                                       {"LIMIT_RESPONSE_HEADERS_ENABLED", "TRUE"},
                                       {"LIMIT_LIMIT_HEADER", "X-Limit"},
                                       {"LIMIT_REMAINING_HEADER", "X-Remaining"},
                                       {"LIMIT_RESET_HEADER", "X-Reset"},
                                       {"HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "true"},
                                       {"CACHE_KEY_PREFIX", "rl_"},
                                       {"LOG_LEVEL", "WARNING"},
                                       {"LOG_FORMAT", "JSON"},
                                       {"USE_STATSD", "false"},
                                       {"USE_PROMETHEUS", "true"},
                                       {"PROMETHEUS_ADDR", "127.0.0.1:9191"},
                                       {"PROMETHEUS_PATH", "/stats/prometheus"},
                                       {"GRPC_MAX_CONNECTION_AGE", "10m"},
                                       {"GRPC_MAX_CONNECTION_AGE_GRACE", "30s"}});
  CHECK(settings.decider.shadow_mode);
  CHECK(settings.decider.quota_mode);
  CHECK(settings.decider.limit_headers.enabled);
  CHECK(settings.decider.limit_headers.limit == "X-Limit");
  CHECK(settings.decider.limit_headers.remaining == "X-Remaining");
  CHECK(settings.decider.limit_headers.reset == "X-Reset");
  CHECK(settings.healthy_only_with_a_domain);
  CHECK(settings.decider.key_prefix == "rl_");
  CHECK(settings.log.level == swl::ratelimit::LogLevel::warn);
  CHECK(settings.log.format == swl::ratelimit::LogFormat::json);
  CHECK(settings.metrics == "127.0.0.1:9191");
  CHECK(settings.metrics_path == "/stats/prometheus");
  CHECK(settings.grpc.max_connection_age == std::chrono::minutes(10));
  CHECK(settings.grpc.max_connection_age_grace == std::chrono::seconds(30));

  const Settings defaults = readEnvoy({});
  CHECK_FALSE(defaults.decider.shadow_mode);
  CHECK_FALSE(defaults.decider.limit_headers.enabled);
  CHECK(defaults.decider.limit_headers.limit == "RateLimit-Limit");
  CHECK(defaults.decider.key_prefix == "swlrl");  // its default is "", which would put keys at the top of Redis's
  CHECK(defaults.log.format == swl::ratelimit::LogFormat::text);
  CHECK(defaults.metrics.empty());
  CHECK_FALSE(defaults.grpc.max_connection_age);
  // Any format but json is text, in any case, as envoyproxy/ratelimit's logrus setup does.
  CHECK(readEnvoy({{"LOG_FORMAT", "logfmt"}}).log.format == swl::ratelimit::LogFormat::text);
  CHECK(readEnvoy({{"LOG_LEVEL", "trace"}}).log.level == swl::ratelimit::LogLevel::debug);
  CHECK(readEnvoy({{"LOG_LEVEL", "Fatal"}}).log.level == swl::ratelimit::LogLevel::error);
  CHECK(readEnvoy({{"USE_PROMETHEUS", "true"}}).metrics == "0.0.0.0:9090");
  CHECK(readEnvoy({{"USE_PROMETHEUS", "true"}, {"DISABLE_STATS", "true"}}).metrics.empty());
}

TEST_CASE("swl-ratelimit accepts envoyproxy/ratelimit's tuning of what it does not have, and says why it ignores it") {
  const Settings settings = readEnvoy({{"REDIS_POOL_SIZE", "20"},
                                       {"REDIS_PIPELINE_WINDOW", "150us"},
                                       {"NEAR_LIMIT_RATIO", "0.9"},
                                       {"EXPIRATION_JITTER_MAX_SECONDS", "60"},
                                       {"DEBUG_PORT", "6070"},
                                       {"REDIS_POOL_ON_EMPTY_BEHAVIOR", "WAIT"},
                                       {"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"},
                                       {"MEMCACHE_HOST_PORT", "memcache:11211"},
                                       {"BACKEND_TYPE", "redis"},
                                       {"CONFIG_TYPE", "FILE"},
                                       {"USE_STATSD", "false"},
                                       {"LOCAL_CACHE_SIZE_IN_BYTES", "0"},
                                       {"TRACING_ENABLED", "false"}});
  CHECK(settings.redis.pool_size == 1);  // a thread's, not radix's connections per call in flight
  for (const char* name : {"REDIS_POOL_SIZE: ", "REDIS_PIPELINE_WINDOW: ", "NEAR_LIMIT_RATIO: ",
                           "EXPIRATION_JITTER_MAX_SECONDS: ", "DEBUG_PORT: ", "REDIS_POOL_ON_EMPTY_BEHAVIOR: ",
                           "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: ", "MEMCACHE_HOST_PORT: only with BACKEND_TYPE"}) {
    INFO(name);
    CHECK(mentions(settings.ignored, name));
  }
  CHECK_FALSE(mentions(settings.ignored, "BACKEND_TYPE"));  // applied: redis is what it is
  CHECK_FALSE(mentions(settings.ignored, "USE_STATSD"));
  CHECK(settings.ignored.size() == 8);
}

TEST_CASE("swl-ratelimit stops on a setting of envoyproxy/ratelimit's it cannot apply, naming it and saying why") {
  refusedByEnvoy({{"BACKEND_TYPE", "memcache"}},
                 "swl-ratelimit: BACKEND_TYPE memcache: swl-ratelimit counts in Redis only; memcache is not supported");
  refusedByEnvoy({{"BACKEND_TYPE", "etcd"}}, "swl-ratelimit: BACKEND_TYPE etcd: expected redis");
  refusedByEnvoy({{"CONFIG_TYPE", "file"}}, "swl-ratelimit: CONFIG_TYPE file: expected FILE or GRPC_XDS_SOTW");
  refusedByEnvoy({{"REDIS_PERSECOND", "true"}},
                 "swl-ratelimit: REDIS_PERSECOND true: swl-ratelimit keeps every counter in one Redis (REDIS_URL's); a "
                 "second one for per-second limits is not supported");
  refusedByEnvoy({{"USE_DOG_STATSD", "1"}},
                 "swl-ratelimit: USE_DOG_STATSD 1: swl-ratelimit has no DogStatsD sink; its metrics are statsd's "
                 "(USE_STATSD=true) or Prometheus's (USE_PROMETHEUS=true, or --metrics)");
  refusedByEnvoy({{"TRACING_ENABLED", "true"}}, "swl-ratelimit: TRACING_ENABLED true: swl-ratelimit exports no traces");
  refusedByEnvoy(
      {{"RESPONSE_DYNAMIC_METADATA", "true"}},
      "swl-ratelimit: RESPONSE_DYNAMIC_METADATA true: swl-ratelimit adds no descriptors to its answers' dynamic "
      "metadata (only a reservation's id, --reservations)");
  refusedByEnvoy({{"GRPC_SERVER_USE_TLS", "true"}},
                 "swl-ratelimit: GRPC_SERVER_USE_TLS true: TLS needs a certificate and its key: give "
                 "GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY");  // the rest of TLS: test_ratelimit_tls.cpp
  refusedByEnvoy({{"REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", "true"}},
                 "swl-ratelimit: REDIS_HEALTH_CHECK_ACTIVE_CONNECTION true: swl-ratelimit answers while Redis is down, "
                 "by its failure mode (--failure-mode), and stays healthy");
  refusedByEnvoy({{"LOCAL_CACHE_SIZE_IN_BYTES", "1048576"}},
                 "swl-ratelimit: LOCAL_CACHE_SIZE_IN_BYTES 1048576: swl-ratelimit keeps no local cache of keys over "
                 "their limit: Redis decides every request");
  refusedByEnvoy({{"REDIS_POOL_ON_EMPTY_BEHAVIOR", "CREATE"}},
                 "swl-ratelimit: REDIS_POOL_ON_EMPTY_BEHAVIOR CREATE: a call waits for a free connection (WAIT), as "
                 "in envoyproxy/ratelimit since radix v4, which refuses it too");
  refusedByEnvoy({{"REDIS_TLS", "true"}, {"REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "true"}},
                 "swl-ratelimit: REDIS_TLS_SKIP_HOSTNAME_VERIFICATION true: swl-ratelimit checks Redis's certificate "
                 "whole, its name too: give the name it holds as SWL_RATELIMIT_REDIS_TLS_SERVER_NAME");
  refusedByEnvoy({{"REDIS_TYPE", "twemproxy"}},
                 "swl-ratelimit: REDIS_TYPE twemproxy: expected single, sentinel or cluster");
  refusedByEnvoy({{"REDIS_SOCKET_TYPE", "udp"}}, "swl-ratelimit: REDIS_SOCKET_TYPE udp: expected tcp or unix");
  refusedByEnvoy({{"REDIS_SOCKET_TYPE", "unix"}, {"REDIS_URL", "redis:6379"}},
                 "swl-ratelimit: REDIS_URL redis:6379: this is HOST:PORT, but REDIS_SOCKET_TYPE is unix: set "
                 "REDIS_SOCKET_TYPE=tcp");
  CHECK_THROWS_MATCHES(
      readOnly({}, {{"RUNTIME_ROOT", "/data"}, {"RUNTIME_SUBDIRECTORY", "rl"}, {"REDIS_URL", "redis:6379"}}),
      SettingsError,
      Catch::Message("swl-ratelimit: REDIS_URL redis:6379: this is HOST:PORT, but REDIS_SOCKET_TYPE "
                     "is unix (its default): set REDIS_SOCKET_TYPE=tcp"));
  refusedByEnvoy({{"REDIS_SOCKET_TYPE", "unix"}, {"REDIS_URL", "redis://:secret@redis:6379"}},
                 "swl-ratelimit: REDIS_URL redis://:***@redis:6379: a redis:// address is reached over TCP, but "
                 "REDIS_SOCKET_TYPE is unix: set REDIS_SOCKET_TYPE=tcp");
  refusedByEnvoy({{"REDIS_URL", "redis://user:secret@redis:six"}},
                 "swl-ratelimit: REDIS_URL redis:six: expected a port from 1 to 65535");
  refusedByEnvoy({{"REDIS_URL", "redis://user:secret@redis:6379/x?password=secret"}},
                 "swl-ratelimit: REDIS_URL redis://user:***@redis:6379/x?password=***: expected a database number "
                 "after the address, 0 to 65535");
  refusedByEnvoy({{"REDIS_URL", "/run/redis.sock"}}, "swl-ratelimit: REDIS_URL /run/redis.sock: expected HOST:PORT");
  refusedByEnvoy({{"REDIS_TYPE", "sentinel"}, {"REDIS_URL", "mymaster"}},
                 "swl-ratelimit: REDIS_URL mymaster: with REDIS_TYPE=sentinel, expected the master's name, then at "
                 "least one Sentinel's HOST:PORT (MASTER,HOST:PORT,...)");
  refusedByEnvoy({{"REDIS_TYPE", "cluster"}, {"REDIS_URL", "redis://u:secret@10.0.0.1:7000,10.0.0.2:7000"}},
                 "swl-ratelimit: REDIS_URL redis://u:***@10.0.0.1:7000,10.0.0.2:7000: with REDIS_TYPE=cluster, "
                 "expected HOST:PORT addresses (credentials go in REDIS_AUTH)");
  refusedByEnvoy({{"REDIS_TYPE", "cluster"}, {"REDIS_URL", "10.0.0.1:7000,10.0.0.2"}},
                 "swl-ratelimit: REDIS_URL 10.0.0.2: expected HOST:PORT");
  refusedByEnvoy({{"SHADOW_MODE", "yes"}},
                 "swl-ratelimit: SHADOW_MODE yes: expected a boolean as Go reads one: 1, t, T, TRUE, true, True, 0, "
                 "f, F, FALSE, false or False");
  refusedByEnvoy(
      {{"RUNTIME_WATCH_ROOT", ""}},
      "swl-ratelimit: RUNTIME_WATCH_ROOT \"\": expected a boolean as Go reads one: 1, t, T, TRUE, true, True, "
      "0, f, F, FALSE, false or False");
  refusedByEnvoy({{"REDIS_TIMEOUT", "10"}},
                 "swl-ratelimit: REDIS_TIMEOUT 10: expected a duration as Go reads one: 300ms, 10s, 1.5h or 2h45m, "
                 "say");
  refusedByEnvoy({{"GRPC_MAX_CONNECTION_AGE", "1d"}},
                 "swl-ratelimit: GRPC_MAX_CONNECTION_AGE 1d: expected a duration as Go reads one: 300ms, 10s, 1.5h or "
                 "2h45m, say");
  refusedByEnvoy({{"PORT", "70000"}}, "swl-ratelimit: PORT 70000: expected a whole number from 0 to 65535");
  refusedByEnvoy({{"GRPC_PORT", "grpc"}}, "swl-ratelimit: GRPC_PORT grpc: expected a whole number from 0 to 65535");
  refusedByEnvoy({{"LOG_LEVEL", "verbose"}},
                 "swl-ratelimit: LOG_LEVEL verbose: expected error, warn, info or debug (or panic, fatal, warning, "
                 "trace)");
  refusedByEnvoy({{"LIMIT_RESET_HEADER", ""}}, "swl-ratelimit: LIMIT_RESET_HEADER \"\": expected a header's name");
  refusedByEnvoy({{"USE_PROMETHEUS", "true"}, {"PROMETHEUS_PATH", "metrics"}},
                 "swl-ratelimit: PROMETHEUS_PATH metrics: expected a path that starts with /");
  refusedByEnvoy({{"USE_PROMETHEUS", "true"}, {"PROMETHEUS_ADDR", "9090"}},
                 "swl-ratelimit: PROMETHEUS_ADDR 9090: expected HOST:PORT");
  refusedByEnvoy({{"CACHE_KEY_PREFIX", "{rl}"}},
                 "swl-ratelimit: CACHE_KEY_PREFIX \"{rl}\": expected a prefix, without braces");
  CHECK_THROWS_MATCHES(
      readOnly({}, {{"RUNTIME_ROOT", "/data"}}), SettingsError,
      Catch::Message("swl-ratelimit: RUNTIME_SUBDIRECTORY is not set: with RUNTIME_WATCH_ROOT=true (its default), "
                     "envoyproxy/ratelimit then reads no file at all; set it (the files are RUNTIME_ROOT/"
                     "RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY), or RUNTIME_WATCH_ROOT=false"));
  CHECK_THROWS_MATCHES(readOnly({}, {{"RUNTIME_ROOT", ""}, {"RUNTIME_WATCH_ROOT", "false"}}), SettingsError,
                       Catch::Message("swl-ratelimit: RUNTIME_ROOT \"\": expected the directory of the runtime's "
                                      "files"));
  // What is only true stops it: false, or not given, is what swl-ratelimit does.
  CHECK_NOTHROW(readEnvoy({{"REDIS_PERSECOND", "false"}, {"TRACING_ENABLED", "0"}, {"GRPC_SERVER_USE_TLS", "F"}}));
}

TEST_CASE("CONFIG_TYPE=GRPC_XDS_SOTW takes envoyproxy/ratelimit's xDS client variables, with its defaults") {
  const Settings defaults = readEnvoy({{"CONFIG_TYPE", "GRPC_XDS_SOTW"}});
  REQUIRE(defaults.source.xds);
  CHECK_FALSE(defaults.source.runtime);  // the configuration is pushed, RUNTIME_* only said to be ignored
  CHECK(mentions(defaults.ignored, "RUNTIME_*: the configuration comes from the xDS server"));
  CHECK(defaults.source.xds->server == "localhost:18000");
  CHECK(defaults.source.xds->node_id == "default");
  CHECK(defaults.source.xds->connect_retry == std::chrono::seconds(3));
  CHECK(defaults.source.xds->backoff_initial == std::chrono::seconds(10));
  CHECK(defaults.source.xds->backoff_most == std::chrono::seconds(60));
  CHECK(defaults.source.xds->backoff_random_factor == 0.5);
  CHECK(defaults.source.xds->backoff_jitter);
  CHECK_FALSE(defaults.source.xds->tls);
  CHECK_FALSE(defaults.source.xds->force_start);
  CHECK(defaults.http == "0.0.0.0:8080");  // envoyproxy's listeners, as with its files

  const Settings given = readEnvoy({{"CONFIG_TYPE", "GRPC_XDS_SOTW"},
                                    {"CONFIG_GRPC_XDS_SERVER_URL", "envoy-gateway:18001"},
                                    {"CONFIG_GRPC_XDS_NODE_ID", "envoy-ratelimit"},
                                    {"CONFIG_GRPC_XDS_NODE_METADATA", "cluster=eg,zone=a"},
                                    {"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "x-tenant:eg"},
                                    {"CONFIG_GRPC_XDS_SERVER_USE_TLS", "true"},
                                    {"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "/certs/ca.crt"},
                                    {"CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "/certs/tls.crt"},
                                    {"CONFIG_GRPC_XDS_CLIENT_TLS_KEY", "/certs/tls.key"},
                                    {"CONFIG_GRPC_XDS_SERVER_TLS_SAN", "envoy-gateway"},
                                    {"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "500ms"},
                                    {"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "1s"},
                                    {"XDS_CLIENT_BACKOFF_MAX_INTERVAL", "1m"},
                                    {"XDS_CLIENT_BACKOFF_RANDOM_FACTOR", "0.25"},
                                    {"XDS_CLIENT_BACKOFF_JITTER", "false"},
                                    {"XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", "1048576"},
                                    {"FORCE_START_WITHOUT_INITIAL_CONFIG", "true"}});
  REQUIRE(given.source.xds);
  const swl::ratelimit::XdsSource& xds = *given.source.xds;
  CHECK(xds.server == "envoy-gateway:18001");
  CHECK(xds.node_id == "envoy-ratelimit");
  CHECK(xds.node_metadata == std::vector<std::pair<std::string, std::string>>{{"cluster", "eg"}, {"zone", "a"}});
  CHECK(xds.headers == std::vector<std::pair<std::string, std::string>>{{"x-tenant", "eg"}});
  CHECK(xds.tls);
  CHECK(xds.server_ca == "/certs/ca.crt");
  CHECK(xds.client_certificate == "/certs/tls.crt");
  CHECK(xds.client_key == "/certs/tls.key");
  CHECK(xds.server_name == "envoy-gateway");
  CHECK(xds.connect_retry == std::chrono::milliseconds(500));
  CHECK(xds.backoff_initial == std::chrono::seconds(1));
  CHECK(xds.backoff_most == std::chrono::minutes(1));
  CHECK(xds.backoff_random_factor == 0.25);
  CHECK_FALSE(xds.backoff_jitter);
  CHECK(xds.max_message_bytes == 1048576);
  CHECK(xds.force_start);

  // --config wins, and the xDS variables are said to be ignored
  const Settings files = readEnvoy({{"CONFIG_TYPE", "GRPC_XDS_SOTW"}}, {"--config", "/etc/ratelimit"});
  CHECK_FALSE(files.source.xds);
  CHECK(mentions(files.ignored, "RUNTIME_* and CONFIG_TYPE: --config"));
  const Settings without = readEnvoy({{"CONFIG_GRPC_XDS_NODE_ID", "envoy-ratelimit"}});
  CHECK_FALSE(without.source.xds);
  CHECK(mentions(without.ignored, "CONFIG_GRPC_XDS_NODE_ID: only with CONFIG_TYPE=GRPC_XDS_SOTW"));
}

TEST_CASE("an xDS client variable that cannot work stops the server, naming it") {
  const auto xds = [](Environment more) {
    more.emplace("CONFIG_TYPE", "GRPC_XDS_SOTW");
    return more;
  };
  refusedByEnvoy(xds({{"XDS_CLIENT_BACKOFF_RANDOM_FACTOR", "2"}}),
                 "swl-ratelimit: XDS_CLIENT_BACKOFF_RANDOM_FACTOR 2: expected a number from 0 to 1");
  refusedByEnvoy(xds({{"CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "/certs/tls.crt"}}),
                 "swl-ratelimit: CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY go together; the "
                 "key is not given");
  refusedByEnvoy(xds({{"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "2m"}}),
                 "swl-ratelimit: XDS_CLIENT_BACKOFF_MAX_INTERVAL is below XDS_CLIENT_BACKOFF_INITIAL_INTERVAL");
  refusedByEnvoy(
      xds({{"XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", "-1"}}),
      "swl-ratelimit: XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES -1: expected a number of bytes (0: gRPC's own limit)");
  refusedByEnvoy(xds({{"CONFIG_GRPC_XDS_SERVER_URL", "envoy-gateway"}}),
                 "swl-ratelimit: CONFIG_GRPC_XDS_SERVER_URL envoy-gateway: expected HOST:PORT");
}
