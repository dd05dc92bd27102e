// swl-ratelimit's flags: one table gives each flag its variable, its usage line and what it sets.

#include <ratelimit/settings.hpp>

#include <swl/redis/cluster_connection.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/connection_pool.hpp>
#include <swl/redis/sentinel_connection.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <optional>
#include <sstream>
#include <string_view>
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

std::optional<std::int64_t> numberBetween(std::string_view text, std::int64_t least, std::int64_t most) {
  std::int64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size() || number < least || number > most) return std::nullopt;
  return number;
}

std::int64_t positiveNumber(const std::string& value, const std::string& given_as, std::int64_t most) {
  if (const auto number = numberBetween(value, 1, most)) return *number;
  throw SettingsError("swl-ratelimit: " + given_as + " " + value + ": expected a whole number from 1 to " +
                      std::to_string(most));
}

bool yesOrNo(const std::string& value, const std::string& given_as) {
  for (const std::string_view yes : {"yes", "true", "on", "1"}) {
    if (value == yes) return true;
  }
  for (const std::string_view no : {"no", "false", "off", "0"}) {
    if (value == no) return false;
  }
  throw SettingsError("swl-ratelimit: " + given_as + " " + value + ": expected yes or no");
}

// What an address flag takes besides HOST:PORT and [IPV6]:PORT.
enum class AddressOf {
  redis_server,  // also unix:PATH
  redis_node,    // one of several: a Sentinel or a Cluster node
  listener,      // also port 0, for the OS to choose
};

Address addressOf(std::string_view text, const std::string& given_as, AddressOf kind) {
  const auto wrong = [&](const std::string& why) {
    return SettingsError("swl-ratelimit: " + given_as + " " + std::string(text) + ": " + why);
  };
  if (text.substr(0, 5) == "unix:") {
    if (kind != AddressOf::redis_server) throw wrong("expected HOST:PORT; a unix socket serves one server only");
    if (text.size() == 5) throw wrong("no path after unix:");
    return Address::unixSocket(std::string(text.substr(5)));
  }
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) throw wrong("expected HOST:PORT");
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto port = numberBetween(text.substr(colon + 1), kind == AddressOf::listener ? 0 : 1, 65535);
  if (!port)
    throw wrong(kind == AddressOf::listener ? "expected a port from 0 to 65535" : "expected a port from 1 to 65535");
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

// The table, in the order of the usage text. Of the three ways to reach Redis (--redis,
// --redis-sentinel, --redis-cluster), one source gives one, and the command line's wins.
constexpr std::array<Flag, 20> kFlags{{
    {"config", "PATH", "", "a YAML file, or a directory of them, in envoyproxy/ratelimit's format (required)",
     [](Settings& s, const std::string& value, const std::string&) { s.config = value; }},
    {"listen", "HOST:PORT", "0.0.0.0:8081", "the gRPC address; port 0 picks a free one",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       addressOf(value, given_as, AddressOf::listener);
       s.listen = value;
     }},
    {"redis", "HOST:PORT|unix:PATH", "127.0.0.1:6379", "one Redis server",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       s.redis.topology = RedisTopology::single;
       s.redis.addresses = {addressOf(value, given_as, AddressOf::redis_server)};
     }},
    {"redis-sentinel", "MASTER,HOST:PORT[,HOST:PORT...]", "",
     "the master the Sentinels at HOST:PORT know as MASTER, followed through failovers",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       std::vector<std::string_view> parts = commaSeparated(value);
       if (parts.size() < 2 || parts.front().empty()) {
         throw SettingsError("swl-ratelimit: " + given_as + " " + value +
                             ": expected the master's name, then at least one Sentinel's HOST:PORT");
       }
       s.redis.topology = RedisTopology::sentinel;
       s.redis.master_name = std::string(parts.front());
       s.redis.addresses = addressesOf({parts.begin() + 1, parts.end()}, given_as);
     }},
    {"redis-cluster", "HOST:PORT[,HOST:PORT...]", "", "a Redis Cluster, found from these nodes",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       s.redis.topology = RedisTopology::cluster;
       s.redis.addresses = addressesOf(commaSeparated(value), given_as);
     }},
    {"redis-user", "NAME", "", "the ACL user (Redis 6 and later)",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.connection.user = value; }},
    {"redis-password", "SECRET", "", "AUTH's password; better given as the variable, which ps does not show",
     [](Settings& s, const std::string& value, const std::string&) { s.redis.connection.password = value; }},
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
       if (value != "open" && value != "closed") {
         throw SettingsError("swl-ratelimit: " + given_as + " " + value + ": expected open or closed");
       }
       s.on_failure = value == "open" ? FailurePolicy::allow : FailurePolicy::deny;
     }},
    {"key-prefix", "P", "swlrl", "what every Redis key of the server starts with",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       // A brace would move the hash tag that keeps one request's keys in one Cluster slot.
       if (value.empty() || value.find_first_of("{}") != std::string::npos) {
         throw SettingsError("swl-ratelimit: " + given_as + " \"" + value + "\": expected a prefix, without braces");
       }
       s.key_prefix = value;
     }},
    {"metrics", "HOST:PORT", "", "Prometheus metrics on /metrics",
     [](Settings& s, const std::string& value, const std::string& given_as) {
       addressOf(value, given_as, AddressOf::listener);
       s.metrics = value;
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

// Applies one source's (the environment's, or the command line's) flags in order; two of them choosing
// how to reach Redis contradict each other.
void applyAll(Settings& settings, const std::vector<std::pair<const Flag*, std::string>>& given,
              const std::function<std::string(std::string_view)>& given_as) {
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

void checkTogether(const Settings& settings) {
  if (settings.config.empty()) throw SettingsError("swl-ratelimit: no --config (or SWL_RATELIMIT_CONFIG)");
  if (settings.redis.topology == RedisTopology::cluster && settings.redis.connection.db != 0) {
    throw SettingsError("swl-ratelimit: --redis-db " + std::to_string(settings.redis.connection.db) +
                        ": a Cluster has only database 0");
  }
}

}  // namespace

Settings readSettings(const std::vector<std::string>& arguments,
                      const std::function<const char*(const char*)>& variable) {
  Settings settings;
  std::vector<std::pair<const Flag*, std::string>> from_environment;
  for (const Flag& flag : kFlags) {
    if (const char* value = variable(variableOf(flag.name).c_str())) from_environment.emplace_back(&flag, value);
  }
  applyAll(settings, from_environment, [](std::string_view flag) { return variableOf(flag); });

  std::vector<std::pair<const Flag*, std::string>> from_arguments;
  for (std::size_t i = 0; i < arguments.size(); i += 2) {
    const std::string& argument = arguments[i];
    const Flag* flag =
        argument.size() > 2 && argument.compare(0, 2, "--") == 0 ? flagNamed(argument.substr(2)) : nullptr;
    if (flag == nullptr) throw SettingsError("swl-ratelimit: unknown flag " + argument);
    if (i + 1 == arguments.size()) throw SettingsError("swl-ratelimit: " + argument + " needs a value");
    from_arguments.emplace_back(flag, arguments[i + 1]);
  }
  applyAll(settings, from_arguments, [](std::string_view flag) { return "--" + std::string(flag); });
  checkTogether(settings);
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
          "a flag wins over its variable.\n";
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
      options.sentinel.user.clear();
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
