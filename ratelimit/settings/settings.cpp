// swl-ratelimit's settings: one table gives each of our flags its variable, its usage line and what it
// sets; below it, envoyproxy/ratelimit's variables, each applied, ignored with a reason, or refused.

#include <ratelimit/settings/go_values.hpp>
#include <ratelimit/settings/settings.hpp>

#include <swl/redis/cluster_connection.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/connection_pool.hpp>
#include <swl/redis/sentinel_connection.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>
#include <utility>

namespace swl::ratelimit {

namespace {

// One flag: `--name value`, or the variable SWL_RATELIMIT_NAME (upper case, '-' as '_').
struct Flag {
  std::string_view name;
  std::string_view value;     // what the value is, in the usage text
  std::string_view fallback;  // the default, in the usage text; empty for none
  std::string_view what;
  void (*apply)(Settings&, const std::string& value, const std::string& given_as);
};

// "swl-ratelimit: NAME VALUE: why", an empty value shown as "".
SettingsError wrong(const std::string& given_as, std::string_view value, const std::string& why) {
  return SettingsError("swl-ratelimit: " + given_as + " " + (value.empty() ? "\"\"" : std::string(value)) + ": " + why);
}

std::optional<std::int64_t> numberBetween(std::string_view text, std::int64_t least, std::int64_t most) {
  std::int64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size() || number < least || number > most) return std::nullopt;
  return number;
}

std::int64_t positiveNumber(const std::string& value, const std::string& given_as, std::int64_t most) {
  if (const auto number = numberBetween(value, 1, most)) return *number;
  throw wrong(given_as, value, "expected a whole number from 1 to " + std::to_string(most));
}

bool yesOrNo(const std::string& value, const std::string& given_as) {
  for (const std::string_view yes : {"yes", "true", "on", "1"}) {
    if (value == yes) return true;
  }
  for (const std::string_view no : {"no", "false", "off", "0"}) {
    if (value == no) return false;
  }
  throw wrong(given_as, value, "expected yes or no");
}

// What an address flag takes besides HOST:PORT and [IPV6]:PORT.
enum class AddressOf {
  redis_server,  // also unix:PATH
  redis_node,    // one of several: a Sentinel or a Cluster node
  listener,      // also port 0, for the OS to choose
};

Address addressOf(std::string_view text, const std::string& given_as, AddressOf kind) {
  if (text.substr(0, 5) == "unix:") {
    if (kind != AddressOf::redis_server) {
      throw wrong(given_as, text, "expected HOST:PORT; a unix socket serves one server only");
    }
    if (text.size() == 5) throw wrong(given_as, text, "no path after unix:");
    return Address::unixSocket(std::string(text.substr(5)));
  }
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) throw wrong(given_as, text, "expected HOST:PORT");
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto port = numberBetween(text.substr(colon + 1), kind == AddressOf::listener ? 0 : 1, 65535);
  if (!port) {
    throw wrong(given_as, text,
                kind == AddressOf::listener ? "expected a port from 0 to 65535" : "expected a port from 1 to 65535");
  }
  return Address{std::string(host), static_cast<int>(*port)};
}

std::vector<std::string_view> commaSeparated(std::string_view text) {
  std::vector<std::string_view> parts;
  for (;;) {
    const auto comma = text.find(',');
    parts.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return parts;
    text.remove_prefix(comma + 1);
  }
}

std::vector<Address> addressesOf(const std::vector<std::string_view>& parts, const std::string& given_as) {
  std::vector<Address> addresses;
  for (const std::string_view part : parts) addresses.push_back(addressOf(part, given_as, AddressOf::redis_node));
  return addresses;
}

std::chrono::milliseconds milliseconds(const std::string& value, const std::string& given_as) {
  return std::chrono::milliseconds(positiveNumber(value, given_as, 3'600'000));
}

void applyRedisSentinel(Settings& s, const std::string& value, const std::string& given_as) {
  std::vector<std::string_view> parts = commaSeparated(value);
  if (parts.size() < 2 || parts.front().empty()) {
    throw wrong(given_as, value, "expected the master's name, then at least one Sentinel's HOST:PORT");
  }
  s.redis.topology = RedisTopology::sentinel;
  s.redis.master_name = std::string(parts.front());
  s.redis.addresses = addressesOf({parts.begin() + 1, parts.end()}, given_as);
}

void applyRedisCluster(Settings& s, const std::string& value, const std::string& given_as) {
  s.redis.topology = RedisTopology::cluster;
  s.redis.addresses = addressesOf(commaSeparated(value), given_as);
}

void applyKeyPrefix(Settings& s, const std::string& value, const std::string& given_as) {
  // A brace would move the hash tag that keeps one request's keys in one Cluster slot.
  if (value.empty() || value.find_first_of("{}") != std::string::npos) {
    throw SettingsError("swl-ratelimit: " + given_as + " \"" + value + "\": expected a prefix, without braces");
  }
  s.decider.key_prefix = value;
}

void applyLogLevel(Settings& s, const std::string& value, const std::string& given_as) {
  const std::optional<LogLevel> level = logLevelNamed(value);
  if (!level) throw wrong(given_as, value, "expected error, warn, info or debug (or panic, fatal, warning, trace)");
  s.log_level = *level;
}

void applyMetricsPath(Settings& s, const std::string& value, const std::string& given_as) {
  if (value.empty() || value.front() != '/') throw wrong(given_as, value, "expected a path that starts with /");
  s.metrics_path = value;
}

// The table, in the order of the usage text. Of the three ways to reach Redis (--redis,
// --redis-sentinel, --redis-cluster), one source gives one, and the command line's wins.
constexpr std::array<Flag, 26> kFlags{{
    {"config", "PATH", "",
     "a YAML file, or a directory of them, in envoyproxy/ratelimit's format (required, unless envoyproxy's "
     "RUNTIME_* variables say where its files are)",
     [](Settings& s, const std::string& value, const std::string&) { s.source.path = value; }},
    {"watch", "yes|no", "yes with RUNTIME_*, no with --config",
     "reload when the configuration's files change, as SIGHUP does",
     [](Settings& s, const std::string& value, const std::string& given_as) { s.watch = yesOrNo(value, given_as); }},
    {"listen", "HOST:PORT|unix:PATH", "0.0.0.0:8081", "the gRPC address; port 0 picks a free one",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       if (value.substr(0, 5) != "unix:" || value.size() == 5) addressOf(value, given_as, AddressOf::listener);
       s.listen = value;
     }},
    {"http", "HOST:PORT", "0.0.0.0:8080 with RUNTIME_*, else none",
     "/healthcheck and /json (a RateLimitRequest as JSON), as envoyproxy/ratelimit's HTTP port",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       addressOf(value, given_as, AddressOf::listener);
       s.http = value;
     }},
    {"redis", "HOST:PORT|unix:PATH", "127.0.0.1:6379", "one Redis server",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       s.redis.topology = RedisTopology::single;
       s.redis.addresses = {addressOf(value, given_as, AddressOf::redis_server)};
     }},
    {"redis-sentinel", "MASTER,HOST:PORT[,HOST:PORT...]", "",
     "the master the Sentinels at HOST:PORT know as MASTER, followed through failovers", applyRedisSentinel},
    {"redis-cluster", "HOST:PORT[,HOST:PORT...]", "", "a Redis Cluster, found from these nodes", applyRedisCluster},
    {"redis-user", "NAME", "", "the ACL user (Redis 6 and later)",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.connection.user = value; }},
    {"redis-password", "SECRET", "", "AUTH's password; better given as the variable, which ps does not show",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.connection.password = value; }},
    {"redis-sentinel-user", "NAME", "", "the Sentinels' own ACL user",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.sentinel_user = value; }},
    {"redis-sentinel-password", "SECRET", "", "the Sentinels' own password",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.sentinel_password = value; }},
    {"redis-db", "N", "0", "the database SELECTed (not on a Cluster)",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       s.redis.connection.db = value == "0" ? 0 : static_cast<int>(positiveNumber(value, given_as, 65535));
     }},
    {"redis-timeout", "MS", "50", "how long one decision waits for Redis before the failure mode answers",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       s.redis.connection.command_timeout = milliseconds(value, given_as);
     }},
    {"redis-connect-timeout", "MS", "200", "how long opening a connection may take",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       s.redis.connection.connect_timeout = milliseconds(value, given_as);
     }},
    {"redis-tls", "yes|no", "no", "TLS to Redis (and to the Sentinels)",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       s.redis.connection.tls.enabled = yesOrNo(value, given_as);
     }},
    {"redis-tls-ca", "FILE", "the system's", "the CAs that may vouch for Redis (PEM)",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.connection.tls.ca_file = value; }},
    {"redis-tls-cert", "FILE", "", "a client certificate, for mutual TLS (PEM)",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.connection.tls.cert_file = value; }},
    {"redis-tls-key", "FILE", "", "the client certificate's key (PEM)",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.connection.tls.key_file = value; }},
    {"redis-tls-server-name", "NAME", "the host", "the name Redis's certificate must hold (and SNI)",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.connection.tls.server_name = value; }},
    {"pool-size", "N", "1",
     "connections to Redis (per master on a Cluster), and threads serving calls on them, each deciding the calls that "
     "wait together",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       s.redis.pool_size = static_cast<std::size_t>(positiveNumber(value, given_as, 4096));
     }},
    {"failure-mode", "open|closed", "open", "what a request gets while Redis cannot answer",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       if (value != "open" && value != "closed") throw wrong(given_as, value, "expected open or closed");
       s.decider.on_failure = value == "open" ? FailurePolicy::allow : FailurePolicy::deny;
     }},
    {"key-prefix", "P", "swlrl", "what every Redis key of the server starts with", applyKeyPrefix},
    {"metrics", "HOST:PORT", "", "Prometheus metrics",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       addressOf(value, given_as, AddressOf::listener);
       s.metrics = value;
     }},
    {"metrics-path", "PATH", "/metrics", "where the metrics are served", applyMetricsPath},
    {"log-level", "error|warn|info|debug", "info", "how much the log says", applyLogLevel},
    {"log-format", "text|json", "text", "a line of text per event, or a JSON object per line",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       if (value != "text" && value != "json") throw wrong(given_as, value, "expected text or json");
       s.log_format = value == "json" ? LogFormat::json : LogFormat::text;
     }},
}};

const Flag* flagNamed(std::string_view name) {
  const auto found = std::find_if(kFlags.begin(), kFlags.end(), [&](const Flag& flag) { return flag.name == name; });
  return found == kFlags.end() ? nullptr : &*found;
}

std::string variableOf(std::string_view flag) {
  std::string variable = "SWL_RATELIMIT_" + std::string(flag);
  for (char& c : variable) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return variable;
}

bool choosesTopology(std::string_view flag) {
  return flag == "redis" || flag == "redis-sentinel" || flag == "redis-cluster";
}

using Given = std::vector<std::pair<const Flag*, std::string>>;

// Applies one source's (the environment's, or the command line's) flags in order; two of them choosing
// how to reach Redis contradict each other.
void applyAll(Settings& settings, const Given& given, const std::function<std::string(std::string_view)>& given_as) {
  std::string topology;
  for (const auto& [flag, value] : given) {
    if (choosesTopology(flag->name)) {
      if (!topology.empty() && topology != given_as(flag->name)) {
        throw SettingsError("swl-ratelimit: " + topology + " and " + given_as(flag->name) +
                            " both say where Redis is; give one");
      }
      topology = given_as(flag->name);
    }
    flag->apply(settings, value, given_as(flag->name));
  }
}

// ------------------------------------------------------------------------------------------------------
// envoyproxy/ratelimit's variables (its src/settings/settings.go), read as it reads them.

// Its variables, as kelseyhightower/envconfig reads them: a variable set to "" is set, so a boolean, a
// number or a duration given empty is as wrong as one given "maybe".
class EnvoyVariables {
 public:
  explicit EnvoyVariables(const std::function<const char*(const char*)>& variable) : variable_(&variable) {}

  std::optional<std::string> text(const char* name) const {
    const char* value = (*variable_)(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }

  bool given(const char* name) const { return (*variable_)(name) != nullptr; }

  std::optional<bool> boolean(const char* name) const {
    const auto value = text(name);
    if (!value) return std::nullopt;
    if (const auto parsed = parseGoBool(*value)) return parsed;
    throw wrong(name, *value,
                "expected a boolean as Go reads one: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false or False");
  }

  bool isTrue(const char* name) const { return boolean(name).value_or(false); }

  std::optional<std::chrono::nanoseconds> duration(const char* name) const {
    const auto value = text(name);
    if (!value) return std::nullopt;
    if (const auto parsed = parseGoDuration(*value)) return parsed;
    throw wrong(name, *value, "expected a duration as Go reads one: 300ms, 10s, 1.5h or 2h45m, say");
  }

  std::optional<std::int64_t> whole(const char* name, std::int64_t least, std::int64_t most) const {
    const auto value = text(name);
    if (!value) return std::nullopt;
    if (const auto parsed = numberBetween(*value, least, most)) return parsed;
    throw wrong(name, *value, "expected a whole number from " + std::to_string(least) + " to " + std::to_string(most));
  }

 private:
  const std::function<const char*(const char*)>* variable_;
};

// What swl-ratelimit takes instead of what a variable says, and why: each is tuning of a mechanism it
// does not have, or a part of one it refuses. Logged when given, so an operator sees them at start.
struct Ignored {
  const char* name;
  const char* why;
};

constexpr const char* kNoDebugListener =
    "swl-ratelimit has no debug listener (/rlconfig, /stats, pprof); its metrics are Prometheus's";
constexpr const char* kOnlyWithServerTls = "only with GRPC_SERVER_USE_TLS=true, which swl-ratelimit refuses";
constexpr const char* kOnlyWithXds = "only with CONFIG_TYPE=GRPC_XDS_SOTW, which swl-ratelimit refuses";
constexpr const char* kStatsd = "statsd's; swl-ratelimit's metrics are Prometheus's (USE_PROMETHEUS, --metrics)";
constexpr const char* kOnlyWithPerSecond = "only with REDIS_PERSECOND=true, which swl-ratelimit refuses";
constexpr const char* kOnlyWithMemcache = "only with BACKEND_TYPE=memcache, which swl-ratelimit refuses";
constexpr const char* kOnlyWithTracing = "only with TRACING_ENABLED=true, which swl-ratelimit refuses";
constexpr const char* kPipelined =
    "every call waiting on a connection is sent in one pipelined write and decided in one round trip already";
constexpr const char* kStartsWithoutRedis =
    "swl-ratelimit starts without waiting for Redis, and its failure mode answers until Redis is there";

constexpr Ignored kIgnored[] = {
    {"DEBUG_HOST", kNoDebugListener},
    {"DEBUG_PORT", kNoDebugListener},
    {"GRPC_SERVER_TLS_CERT", kOnlyWithServerTls},
    {"GRPC_SERVER_TLS_KEY", kOnlyWithServerTls},
    {"GRPC_CLIENT_TLS_CACERT", kOnlyWithServerTls},
    {"GRPC_CLIENT_TLS_SAN", kOnlyWithServerTls},
    {"FORCE_START_WITHOUT_INITIAL_CONFIG", "swl-ratelimit reads its files before it listens, always"},
    {"CONFIG_GRPC_XDS_NODE_ID", kOnlyWithXds},
    {"CONFIG_GRPC_XDS_NODE_METADATA", kOnlyWithXds},
    {"CONFIG_GRPC_XDS_SERVER_URL", kOnlyWithXds},
    {"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", kOnlyWithXds},
    {"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", kOnlyWithXds},
    {"CONFIG_GRPC_XDS_SERVER_USE_TLS", kOnlyWithXds},
    {"CONFIG_GRPC_XDS_CLIENT_TLS_CERT", kOnlyWithXds},
    {"CONFIG_GRPC_XDS_CLIENT_TLS_KEY", kOnlyWithXds},
    {"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", kOnlyWithXds},
    {"CONFIG_GRPC_XDS_SERVER_TLS_SAN", kOnlyWithXds},
    {"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", kOnlyWithXds},
    {"XDS_CLIENT_BACKOFF_MAX_INTERVAL", kOnlyWithXds},
    {"XDS_CLIENT_BACKOFF_RANDOM_FACTOR", kOnlyWithXds},
    {"XDS_CLIENT_BACKOFF_JITTER", kOnlyWithXds},
    {"XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", kOnlyWithXds},
    {"STATSD_HOST", kStatsd},
    {"STATSD_PORT", kStatsd},
    {"USE_DOG_STATSD_MOGRIFIERS", kStatsd},
    {"EXTRA_TAGS", kStatsd},
    {"STATS_FLUSH_INTERVAL", kStatsd},
    {"PROMETHEUS_MAPPER_YAML",
     "it maps envoyproxy/ratelimit's statsd names; swl-ratelimit's series have names of their own"},
    {"PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", "swl_decision_duration_seconds is in seconds, as Prometheus's are"},
    {"EXPIRATION_JITTER_MAX_SECONDS",
     "it spreads the expiry of envoyproxy's per-window keys; swl's keys expire when their window has passed"},
    {"NEAR_LIMIT_RATIO", "only for envoyproxy/ratelimit's near_limit statistic"},
    {"STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT",
     "swl-ratelimit decides a request's descriptors all or nothing: a refused request counts in none, always"},
    {"REDIS_POOL_SIZE",
     "a connection serves every call waiting on it in one round trip, and each has a thread: their number is "
     "SWL_RATELIMIT_POOL_SIZE (--pool-size), which pays off only with cores to spare"},
    {"REDIS_PIPELINE_WINDOW", kPipelined},
    {"REDIS_PIPELINE_LIMIT", kPipelined},
    {"REDIS_CLUSTER_PIPELINE_PARALLELISM",
     "a request's keys share one Cluster slot, so one round trip to one master decides it"},
    {"REDIS_POOL_ON_EMPTY_BEHAVIOR",
     "a call waits up to a second for a free connection, then the failure mode answers"},
    {"REDIS_STARTUP_INITIAL_INTERVAL", kStartsWithoutRedis},
    {"REDIS_STARTUP_MAX_INTERVAL", kStartsWithoutRedis},
    {"REDIS_STARTUP_MAX_ELAPSED_TIME", kStartsWithoutRedis},
    {"REDIS_PERSECOND_SOCKET_TYPE", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_TYPE", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_URL", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_POOL_SIZE", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_AUTH", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_SENTINEL_AUTH", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_TLS", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_PIPELINE_WINDOW", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_PIPELINE_LIMIT", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_TIMEOUT", kOnlyWithPerSecond},
    {"REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR", kOnlyWithPerSecond},
    {"MEMCACHE_HOST_PORT", kOnlyWithMemcache},
    {"MEMCACHE_SRV", kOnlyWithMemcache},
    {"MEMCACHE_SRV_REFRESH", kOnlyWithMemcache},
    {"MEMCACHE_MAX_IDLE_CONNS", kOnlyWithMemcache},
    {"MEMCACHE_TLS", kOnlyWithMemcache},
    {"MEMCACHE_TLS_CLIENT_CERT", kOnlyWithMemcache},
    {"MEMCACHE_TLS_CLIENT_KEY", kOnlyWithMemcache},
    {"MEMCACHE_TLS_CACERT", kOnlyWithMemcache},
    {"MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION", kOnlyWithMemcache},
    {"TRACING_SERVICE_NAME", kOnlyWithTracing},
    {"TRACING_SERVICE_NAMESPACE", kOnlyWithTracing},
    {"TRACING_SERVICE_INSTANCE_ID", kOnlyWithTracing},
    {"TRACING_EXPORTER_PROTOCOL", kOnlyWithTracing},
    {"TRACING_SAMPLING_RATE", kOnlyWithTracing},
};

constexpr const char* kRuntimeVariables[] = {"RUNTIME_ROOT", "RUNTIME_SUBDIRECTORY", "RUNTIME_APPDIRECTORY",
                                             "RUNTIME_WATCH_ROOT", "RUNTIME_IGNOREDOTFILES"};

std::string lowerCase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Go's net.JoinHostPort: an IPv6 address in brackets.
std::string joinHostPort(std::string host, std::int64_t port) {
  if (host.empty()) host = "0.0.0.0";  // Go's ":8080", every interface
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return host + ":" + std::to_string(port);
}

// A redis:// URL with its password (in the user part or the query) left out: for messages.
std::string withoutPassword(const std::string& url) {
  std::string shown = url;
  const auto scheme_end = shown.find("://");
  const auto at = shown.rfind('@');
  if (scheme_end != std::string::npos && at != std::string::npos && at > scheme_end) {
    const auto colon = shown.find(':', scheme_end + 3);
    if (colon != std::string::npos && colon < at) shown.replace(colon + 1, at - colon - 1, "***");
  }
  const auto password = shown.find("password=");
  if (password != std::string::npos) {
    const auto end = shown.find('&', password);
    shown.replace(password + 9, (end == std::string::npos ? shown.size() : end) - password - 9, "***");
  }
  return shown;
}

std::string percentDecoded(std::string_view text) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    unsigned value = 0;
    if (text[i] == '%' && i + 2 < text.size() &&
        std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16).ptr == text.data() + i + 3) {
      decoded += static_cast<char>(value);
      i += 2;
    } else {
      decoded += text[i];
    }
  }
  return decoded;
}

// REDIS_AUTH and REDIS_SENTINEL_AUTH: "password", or "user:password" (split at the first colon, as Go's
// strings.Cut does).
std::pair<std::string, std::string> userAndPassword(const std::string& auth) {
  const auto colon = auth.find(':');
  if (colon == std::string::npos) return {"", auth};
  return {auth.substr(0, colon), auth.substr(colon + 1)};
}

// One Redis server's REDIS_URL written as radix reads it: redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]
// [?db=N&username=U&password=P], the port 6379 when none is written.
void applyRedisUrl(Settings& settings, const std::string& url) {
  const std::string given_as = "REDIS_URL";
  const std::string shown = withoutPassword(url);
  std::string_view rest = std::string_view(url).substr(8);  // after redis://
  std::string_view query;
  if (const auto mark = rest.find('?'); mark != std::string_view::npos) {
    query = rest.substr(mark + 1);
    rest = rest.substr(0, mark);
  }
  std::string_view path;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  ConnectionOptions& connection = settings.redis.connection;
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view user_part = rest.substr(0, at);
    const auto colon = user_part.find(':');
    connection.user = percentDecoded(user_part.substr(0, colon));
    if (colon != std::string_view::npos) connection.password = percentDecoded(user_part.substr(colon + 1));
    rest = rest.substr(at + 1);
  }
  std::string db(path);
  std::string_view remaining = query;
  while (!remaining.empty()) {
    const auto amp = remaining.find('&');
    const std::string_view pair = remaining.substr(0, amp);
    remaining = amp == std::string_view::npos ? std::string_view() : remaining.substr(amp + 1);
    const auto equals = pair.find('=');
    const std::string_view name = pair.substr(0, equals);
    const std::string value = equals == std::string_view::npos ? "" : percentDecoded(pair.substr(equals + 1));
    if (name == "db" && db.empty()) db = value;
    if (name == "username" && connection.user.empty()) connection.user = value;
    if (name == "password" && connection.password.empty()) connection.password = value;
  }
  if (!db.empty()) {
    const auto number = numberBetween(db, 0, 65535);
    if (!number) throw wrong(given_as, shown, "expected a database number after the address, 0 to 65535");
    connection.db = static_cast<int>(*number);
  }
  std::string address(rest);
  const bool has_port = !address.empty() && address.back() != ']' && address.find(':') != std::string::npos &&
                        (address.front() != '[' || address.find("]:") != std::string::npos);
  if (!has_port) address += ":6379";
  settings.redis.topology = RedisTopology::single;
  settings.redis.addresses = {addressOf(address, given_as, AddressOf::redis_node)};
}

// REDIS_TYPE, REDIS_SOCKET_TYPE and REDIS_URL: where Redis is, in the format of its type.
void applyEnvoyRedisAddress(Settings& settings, const EnvoyVariables& envoy) {
  const std::string type = lowerCase(envoy.text("REDIS_TYPE").value_or("single"));
  const std::string url = envoy.text("REDIS_URL").value_or("/var/run/nutcracker/ratelimit.sock");
  const std::string shown = withoutPassword(url);
  if ((type == "sentinel" || type == "cluster") && url.find("://") != std::string::npos) {
    throw wrong("REDIS_URL", shown,
                "with REDIS_TYPE=" + type + ", expected HOST:PORT addresses (credentials go in REDIS_AUTH)");
  }
  if (type == "sentinel") {
    const std::vector<std::string_view> parts = commaSeparated(url);
    if (parts.size() < 2 || parts.front().empty()) {
      throw wrong("REDIS_URL", shown,
                  "with REDIS_TYPE=sentinel, expected the master's name, then at least one Sentinel's HOST:PORT "
                  "(MASTER,HOST:PORT,...)");
    }
    applyRedisSentinel(settings, url, "REDIS_URL");
  } else if (type == "cluster") {
    applyRedisCluster(settings, url, "REDIS_URL");
  } else if (type == "single") {
    const std::string socket = envoy.text("REDIS_SOCKET_TYPE").value_or("unix");
    const std::string socket_named =
        envoy.given("REDIS_SOCKET_TYPE") ? "REDIS_SOCKET_TYPE is unix" : "REDIS_SOCKET_TYPE is unix (its default)";
    const bool redis_url = url.rfind("redis://", 0) == 0;
    if (socket == "unix") {
      if (url.empty()) throw wrong("REDIS_URL", "", "expected a unix socket's path, as REDIS_SOCKET_TYPE is unix");
      if (redis_url) {
        throw wrong("REDIS_URL", shown,
                    "a redis:// address is reached over TCP, but " + socket_named + ": set REDIS_SOCKET_TYPE=tcp");
      }
      // envoyproxy/ratelimit would dial HOST:PORT as a socket's path and never reach Redis: refused here
      // at start rather than answered by the failure mode forever.
      if (url.find('/') == std::string::npos && url.find(':') != std::string::npos) {
        bool is_address = true;
        try {
          addressOf(url, "REDIS_URL", AddressOf::redis_node);
        } catch (const SettingsError&) {
          is_address = false;
        }
        if (is_address) {
          throw wrong("REDIS_URL", url, "this is HOST:PORT, but " + socket_named + ": set REDIS_SOCKET_TYPE=tcp");
        }
      }
      settings.redis.topology = RedisTopology::single;
      settings.redis.addresses = {Address::unixSocket(url)};
    } else if (socket == "tcp" || socket == "tcp4" || socket == "tcp6") {
      if (redis_url) {
        applyRedisUrl(settings, url);
      } else if (url.rfind("unix:", 0) == 0 || url.find("://") != std::string::npos) {
        throw wrong("REDIS_URL", shown, "expected HOST:PORT or redis://HOST:PORT, as REDIS_SOCKET_TYPE is " + socket);
      } else {
        settings.redis.topology = RedisTopology::single;
        settings.redis.addresses = {addressOf(url, "REDIS_URL", AddressOf::redis_node)};
      }
    } else {
      throw wrong("REDIS_SOCKET_TYPE", socket, "expected tcp or unix");
    }
  } else {
    throw wrong("REDIS_TYPE", *envoy.text("REDIS_TYPE"), "expected single, sentinel or cluster");
  }
}

// How every connection reaches Redis: credentials, TLS, the connect timeout.
void applyEnvoyRedisConnection(Settings& settings, const EnvoyVariables& envoy) {
  ConnectionOptions& connection = settings.redis.connection;
  // REDIS_AUTH wins over a redis:// URL's user and password, as in envoyproxy/ratelimit.
  if (const auto auth = envoy.text("REDIS_AUTH"); auth && !auth->empty()) {
    std::tie(connection.user, connection.password) = userAndPassword(*auth);
  }
  if (const auto auth = envoy.text("REDIS_SENTINEL_AUTH"); auth && !auth->empty()) {
    std::tie(settings.redis.sentinel_user, settings.redis.sentinel_password) = userAndPassword(*auth);
  }
  if (const auto tls = envoy.boolean("REDIS_TLS")) connection.tls.enabled = *tls;
  if (const auto file = envoy.text("REDIS_TLS_CLIENT_CERT"); file && !file->empty()) connection.tls.cert_file = *file;
  if (const auto file = envoy.text("REDIS_TLS_CLIENT_KEY"); file && !file->empty()) connection.tls.key_file = *file;
  if (const auto file = envoy.text("REDIS_TLS_CACERT"); file && !file->empty()) connection.tls.ca_file = *file;
  // It is radix's dial timeout: how long connecting may take (0 or less: as long as the OS lets it). A
  // decision's own wait is SWL_RATELIMIT_REDIS_TIMEOUT's, milliseconds, which the failure mode relies on.
  if (const auto timeout = envoy.duration("REDIS_TIMEOUT")) {
    const auto rounded_up = std::chrono::ceil<std::chrono::milliseconds>(*timeout);
    connection.connect_timeout = rounded_up.count() > 0 ? rounded_up : std::chrono::milliseconds(0);
  }
}

// What would change what clients or operators get, and that swl-ratelimit cannot do: it stops the server.
void refuseWhatCannotApply(const EnvoyVariables& envoy) {
  if (const auto backend = envoy.text("BACKEND_TYPE"); backend && !backend->empty() && *backend != "redis") {
    throw wrong(
        "BACKEND_TYPE", *backend,
        *backend == "memcache" ? "swl-ratelimit counts in Redis only; memcache is not supported" : "expected redis");
  }
  if (const auto type = envoy.text("CONFIG_TYPE"); type && *type != "FILE") {
    throw wrong("CONFIG_TYPE", *type,
                *type == "GRPC_XDS_SOTW" ? "swl-ratelimit reads its configuration from files only; it has no xDS client"
                                         : "expected FILE");
  }
  const auto refuseTrue = [&](const char* name, const std::string& why) {
    if (envoy.isTrue(name)) throw wrong(name, *envoy.text(name), why);
  };
  refuseTrue("REDIS_PERSECOND",
             "swl-ratelimit keeps every counter in one Redis (REDIS_URL's); a second one for per-second limits is not "
             "supported");
  refuseTrue("USE_STATSD",
             "swl-ratelimit has no statsd sink; its metrics are Prometheus's (USE_PROMETHEUS=true, or --metrics)");
  refuseTrue("USE_DOG_STATSD",
             "swl-ratelimit has no DogStatsD sink; its metrics are Prometheus's (USE_PROMETHEUS=true, or --metrics)");
  refuseTrue("TRACING_ENABLED", "swl-ratelimit exports no traces");
  refuseTrue("RESPONSE_DYNAMIC_METADATA", "swl-ratelimit adds no dynamic metadata to its answers");
  refuseTrue("GRPC_SERVER_USE_TLS",
             "swl-ratelimit serves gRPC without TLS; terminate TLS before it (a sidecar, or a mesh)");
  refuseTrue("REDIS_HEALTH_CHECK_ACTIVE_CONNECTION",
             "swl-ratelimit answers while Redis is down, by its failure mode (--failure-mode), and stays healthy");
  if (const auto size = envoy.whole("LOCAL_CACHE_SIZE_IN_BYTES", 0, std::numeric_limits<std::int64_t>::max());
      size && *size != 0) {
    throw wrong("LOCAL_CACHE_SIZE_IN_BYTES", std::to_string(*size),
                "swl-ratelimit keeps no local cache of keys over their limit: Redis decides every request");
  }
  if (const auto behavior = envoy.text("REDIS_POOL_ON_EMPTY_BEHAVIOR")) {
    const std::string lower = lowerCase(*behavior);
    if (lower == "create" || lower == "error") {
      throw wrong("REDIS_POOL_ON_EMPTY_BEHAVIOR", *behavior,
                  "a call waits for a free connection (WAIT), as in envoyproxy/ratelimit since radix v4, which refuses "
                  "it too");
    }
  }
}

void applyEnvoyListeners(Settings& settings, const EnvoyVariables& envoy, bool envoy_mode) {
  if (const auto uds = envoy.text("GRPC_UDS"); uds && !uds->empty()) {
    settings.listen = "unix:" + *uds;
  } else if (envoy.given("GRPC_HOST") || envoy.given("GRPC_PORT")) {
    const auto port = envoy.whole("GRPC_PORT", 0, 65535).value_or(8081);
    settings.listen = joinHostPort(envoy.text("GRPC_HOST").value_or("0.0.0.0"), port);
    addressOf(settings.listen, "GRPC_HOST and GRPC_PORT", AddressOf::listener);
  }
  if (envoy.given("HOST") || envoy.given("PORT")) {
    const auto port = envoy.whole("PORT", 0, 65535).value_or(8080);
    settings.http = joinHostPort(envoy.text("HOST").value_or("0.0.0.0"), port);
    addressOf(settings.http, "HOST and PORT", AddressOf::listener);
  } else if (envoy_mode) {
    settings.http = "0.0.0.0:8080";  // envoyproxy/ratelimit's HTTP port is always on
  }
  if (auto age = envoy.duration("GRPC_MAX_CONNECTION_AGE")) {
    settings.grpc_max_connection_age = std::chrono::ceil<std::chrono::milliseconds>(*age);
  }
  if (auto grace = envoy.duration("GRPC_MAX_CONNECTION_AGE_GRACE")) {
    settings.grpc_max_connection_age_grace = std::chrono::ceil<std::chrono::milliseconds>(*grace);
  }
}

void applyEnvoyRuntime(Settings& settings, const EnvoyVariables& envoy) {
  RuntimeDirectory runtime;
  if (const auto root = envoy.text("RUNTIME_ROOT")) runtime.root = *root;
  if (const auto subdirectory = envoy.text("RUNTIME_SUBDIRECTORY")) runtime.subdirectory = *subdirectory;
  if (const auto app = envoy.text("RUNTIME_APPDIRECTORY")) runtime.app_directory = *app;
  if (const auto watch_root = envoy.boolean("RUNTIME_WATCH_ROOT")) runtime.watch_root = *watch_root;
  if (const auto ignore = envoy.boolean("RUNTIME_IGNOREDOTFILES")) runtime.ignore_dot_files = *ignore;
  if (runtime.root.empty()) throw wrong("RUNTIME_ROOT", "", "expected the directory of the runtime's files");
  if (runtime.watch_root && runtime.subdirectory.empty()) {
    throw SettingsError(
        "swl-ratelimit: RUNTIME_SUBDIRECTORY is not set: with RUNTIME_WATCH_ROOT=true (its default), envoyproxy/"
        "ratelimit then reads no file at all; set it (the files are RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/"
        "RUNTIME_APPDIRECTORY), or RUNTIME_WATCH_ROOT=false");
  }
  settings.source.runtime = runtime;
}

void applyEnvoyVariables(Settings& settings, const EnvoyVariables& envoy, bool ours_give_config) {
  refuseWhatCannotApply(envoy);
  const bool runtime_given = std::any_of(std::begin(kRuntimeVariables), std::end(kRuntimeVariables),
                                         [&](const char* name) { return envoy.given(name); });
  const bool envoy_mode = runtime_given && !ours_give_config;
  if (envoy_mode) applyEnvoyRuntime(settings, envoy);
  if (runtime_given && ours_give_config) {
    settings.ignored.push_back("RUNTIME_*: --config (or SWL_RATELIMIT_CONFIG) says where the configuration is");
  }
  if (const auto merge = envoy.boolean("MERGE_DOMAIN_CONFIG")) settings.source.merge_domains = *merge;
  applyEnvoyListeners(settings, envoy, envoy_mode);

  // Where Redis is: REDIS_URL's, or its default where envoyproxy's settings run the server.
  if (envoy.given("REDIS_URL") || envoy_mode) {
    applyEnvoyRedisAddress(settings, envoy);
  } else {
    for (const char* name : {"REDIS_TYPE", "REDIS_SOCKET_TYPE"}) {
      if (envoy.given(name)) settings.ignored.push_back(std::string(name) + ": only with REDIS_URL");
    }
  }
  applyEnvoyRedisConnection(settings, envoy);
  if (const auto prefix = envoy.text("CACHE_KEY_PREFIX"); prefix && !prefix->empty()) {
    applyKeyPrefix(settings, *prefix, "CACHE_KEY_PREFIX");
  }

  if (const auto level = envoy.text("LOG_LEVEL")) applyLogLevel(settings, *level, "LOG_LEVEL");
  // Any format but json is text, in any case, as in envoyproxy/ratelimit.
  if (const auto format = envoy.text("LOG_FORMAT")) {
    settings.log_format = lowerCase(*format) == "json" ? LogFormat::json : LogFormat::text;
  }

  if (envoy.isTrue("USE_PROMETHEUS") && !envoy.isTrue("DISABLE_STATS")) {
    std::string address = envoy.text("PROMETHEUS_ADDR").value_or(":9090");
    if (!address.empty() && address.front() == ':') address = "0.0.0.0" + address;
    addressOf(address, "PROMETHEUS_ADDR", AddressOf::listener);
    settings.metrics = address;
    if (const auto path = envoy.text("PROMETHEUS_PATH")) applyMetricsPath(settings, *path, "PROMETHEUS_PATH");
  } else {
    for (const char* name : {"PROMETHEUS_ADDR", "PROMETHEUS_PATH"}) {
      if (envoy.given(name)) {
        settings.ignored.push_back(std::string(name) + ": only with USE_PROMETHEUS=true (and DISABLE_STATS not true)");
      }
    }
  }

  if (const auto shadow = envoy.boolean("SHADOW_MODE")) settings.decider.shadow_mode = *shadow;
  if (const auto quota = envoy.boolean("QUOTA_MODE")) settings.decider.quota_mode = *quota;
  if (const auto headers = envoy.boolean("LIMIT_RESPONSE_HEADERS_ENABLED"))
    settings.decider.limit_headers.enabled = *headers;
  const std::pair<const char*, std::string*> header_names[] = {
      {"LIMIT_LIMIT_HEADER", &settings.decider.limit_headers.limit},
      {"LIMIT_REMAINING_HEADER", &settings.decider.limit_headers.remaining},
      {"LIMIT_RESET_HEADER", &settings.decider.limit_headers.reset}};
  for (const auto& [name, header] : header_names) {
    if (const auto value = envoy.text(name)) {
      if (value->empty()) throw wrong(name, "", "expected a header's name");
      *header = *value;
    }
  }
  if (const auto healthy = envoy.boolean("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED")) {
    settings.healthy_only_with_a_domain = *healthy;
  }

  for (const Ignored& ignored : kIgnored) {
    if (envoy.given(ignored.name)) settings.ignored.push_back(std::string(ignored.name) + ": " + ignored.why);
  }
}

// ------------------------------------------------------------------------------------------------------

void checkTogether(const Settings& settings, const EnvoyVariables& envoy) {
  if (settings.source.path.empty() && !settings.source.runtime) {
    throw SettingsError(
        "swl-ratelimit: no configuration: give --config (or SWL_RATELIMIT_CONFIG), or envoyproxy/ratelimit's "
        "RUNTIME_ROOT and RUNTIME_SUBDIRECTORY");
  }
  if (settings.redis.topology == RedisTopology::cluster && settings.redis.connection.db != 0) {
    throw SettingsError("swl-ratelimit: --redis-db " + std::to_string(settings.redis.connection.db) +
                        ": a Cluster has only database 0");
  }
  // Go checks the certificate's chain without its name; swl's TLS checks both or neither. With the name
  // given, both are checked against it, and nothing is accepted that the operator did not name.
  if (envoy.isTrue("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION") && settings.redis.connection.tls.enabled &&
      settings.redis.connection.tls.server_name.empty()) {
    throw wrong("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", *envoy.text("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION"),
                "swl-ratelimit checks Redis's certificate whole, its name too: give the name it holds as "
                "SWL_RATELIMIT_REDIS_TLS_SERVER_NAME");
  }
}

}  // namespace

Settings readSettings(const std::vector<std::string>& arguments,
                      const std::function<const char*(const char*)>& variable) {
  Given from_environment;
  for (const Flag& flag : kFlags) {
    if (const char* value = variable(variableOf(flag.name).c_str())) from_environment.emplace_back(&flag, value);
  }
  Given from_arguments;
  for (std::size_t i = 0; i < arguments.size(); i += 2) {
    const std::string& argument = arguments[i];
    const Flag* flag =
        argument.size() > 2 && argument.compare(0, 2, "--") == 0 ? flagNamed(argument.substr(2)) : nullptr;
    if (flag == nullptr) throw SettingsError("swl-ratelimit: unknown flag " + argument);
    if (i + 1 == arguments.size()) throw SettingsError("swl-ratelimit: " + argument + " needs a value");
    from_arguments.emplace_back(flag, arguments[i + 1]);
  }
  // Whether ours say where the configuration is decides whether envoyproxy's RUNTIME_* variables do.
  const auto givesConfig = [](const std::pair<const Flag*, std::string>& given) {
    return given.first->name == "config";
  };
  const bool ours_give_config = std::any_of(from_environment.begin(), from_environment.end(), givesConfig) ||
                                std::any_of(from_arguments.begin(), from_arguments.end(), givesConfig);

  Settings settings;
  const EnvoyVariables envoy(variable);
  applyEnvoyVariables(settings, envoy, ours_give_config);
  applyAll(settings, from_environment, [](std::string_view flag) { return variableOf(flag); });
  applyAll(settings, from_arguments, [](std::string_view flag) { return "--" + std::string(flag); });
  checkTogether(settings, envoy);
  return settings;
}

std::string usageText() {
  std::ostringstream text;
  text << "usage: swl-ratelimit --config PATH [--flag value ...]\n";
  const auto line = [&](const Flag& flag) {
    const std::string left = "  --" + std::string(flag.name) + " " + std::string(flag.value);
    text << left << std::string(left.size() < 44 ? 44 - left.size() : 1, ' ') << flag.what;
    if (!flag.fallback.empty()) text << "; default " << flag.fallback;
    text << "\n";
  };
  for (const Flag& flag : kFlags) line(flag);
  text << "Each flag may come from the environment instead: --redis-tls-ca as SWL_RATELIMIT_REDIS_TLS_CA, and so on;\n"
          "a flag wins over its variable. envoyproxy/ratelimit's variables (REDIS_URL, RUNTIME_ROOT, PORT, ...) are\n"
          "read too, and ours win over them; a setting of theirs that this server cannot apply stops it, naming it.\n"
          "docs/ratelimit.md says what becomes of each.\n";
  return text.str();
}

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
