// swl-ratelimit's flags: one table gives each flag its variable, its usage line and the field it sets;
// the usage text shows each field's default as the field holds it. Then the order of the sources:
// envoyproxy/ratelimit's variables (envoy.cpp), the environment's SWL_RATELIMIT_*, the command line.

#include <ratelimit/settings/address.hpp>
#include <ratelimit/settings/envoy.hpp>
#include <ratelimit/settings/settings.hpp>
#include <ratelimit/settings/values.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace swl::ratelimit {

namespace {

using settings::fieldAt;

// How a flag's value becomes its field, and how the field's default reads in the usage text (empty:
// none to show). `show` is given Settings as they are before any source is read.
using Apply = void (*)(Settings& settings, const std::string& value, const std::string& given_as);
using Show = std::string (*)(Settings& defaults);
struct Field {
  Apply apply;
  Show show;
};

// One flag: `--name value`, or the variable SWL_RATELIMIT_NAME (upper case, '-' as '_').
struct Flag {
  std::string_view name;
  std::string_view value;  // what the value is, in the usage text
  std::string_view what;
  Field field;
};

std::string shown(const std::string& text) { return text; }
std::string shown(const std::filesystem::path& path) { return path.string(); }

std::string none(Settings&) { return {}; }

// The fields by kind of value, each named by its members (fieldAt).
template <auto... path>
constexpr Field text() {
  return {[](Settings& s, const std::string& value, const std::string&) { fieldAt<path...>(s) = value; },
          [](Settings& s) { return shown(fieldAt<path...>(s)); }};
}

template <auto... path>
constexpr Field yesNo() {
  return {[](Settings& s, const std::string& value, const std::string& given_as) {
            fieldAt<path...>(s) = settings::yesOrNo(value, given_as);
          },
          [](Settings& s) -> std::string { return fieldAt<path...>(s) ? "yes" : "no"; }};
}

template <auto... path>
constexpr Field milliseconds() {
  return {[](Settings& s, const std::string& value, const std::string& given_as) {
            fieldAt<path...>(s) = settings::milliseconds(value, given_as);
          },
          [](Settings& s) { return std::to_string(fieldAt<path...>(s).count()); }};
}

template <std::int64_t most, auto... path>
constexpr Field count() {
  return {[](Settings& s, const std::string& value, const std::string& given_as) {
            using Type = std::remove_reference_t<decltype(fieldAt<path...>(s))>;
            fieldAt<path...>(s) = static_cast<Type>(settings::positiveNumber(value, given_as, most));
          },
          [](Settings& s) { return std::to_string(fieldAt<path...>(s)); }};
}

// One word of `words` ({word, value} pairs), each naming a value of the field.
template <const auto& words, auto... path>
constexpr Field oneOf() {
  return {[](Settings& s, const std::string& value, const std::string& given_as) {
            for (const auto& [word, meant] : words) {
              if (value == word) return void(fieldAt<path...>(s) = meant);
            }
            throw settings::wrong(given_as, value,
                                  "expected " + std::string(words[0].first) + " or " + std::string(words[1].first));
          },
          [](Settings& s) {
            for (const auto& [word, meant] : words) {
              if (fieldAt<path...>(s) == meant) return std::string(word);
            }
            return std::string();
          }};
}

// HOST:PORT with port 0 for any free one; `with_socket`, unix:PATH too.
template <bool with_socket, auto... path>
constexpr Field listener() {
  return {[](Settings& s, const std::string& value, const std::string& given_as) {
            if (!with_socket || value.substr(0, 5) != "unix:" || value.size() == 5) {
              addressOf(value, given_as, AddressOf::listener);
            }
            fieldAt<path...>(s) = value;
          },
          [](Settings& s) { return shown(fieldAt<path...>(s)); }};
}

// A field whose default the usage text says in words, where its value alone does not.
constexpr Field described(Field field, Show words) { return {field.apply, words}; }

constexpr std::pair<std::string_view, FailurePolicy> kFailureModes[] = {{"open", FailurePolicy::allow},
                                                                        {"closed", FailurePolicy::deny}};
constexpr std::pair<std::string_view, LogFormat> kLogFormats[] = {{"text", LogFormat::text}, {"json", LogFormat::json}};

// The table, in the order of the usage text. Of the three ways to reach Redis (--redis,
// --redis-sentinel, --redis-cluster), one source gives one, and the command line's wins.
constexpr std::array<Flag, 36> kFlags{{
    {"config", "PATH",
     "a YAML file, or a directory of them, in envoyproxy/ratelimit's format (required, unless envoyproxy's "
     "RUNTIME_* variables say where its files are)",
     text<&Settings::source, &ConfigSource::path>()},
    {"watch", "yes|no", "reload when the configuration's files change, as SIGHUP does",
     described(yesNo<&Settings::watch>(),
               [](Settings&) -> std::string { return "yes with RUNTIME_*, no with --config"; })},
    {"listen", "HOST:PORT|unix:PATH", "the gRPC address; port 0 picks a free one",
     listener<true, &Settings::grpc, &GrpcOptions::listen>()},
    {"grpc-tls-cert", "FILE",
     "serve gRPC over TLS with this certificate (PEM, its chain after it), read again as it changes",
     text<&Settings::grpc, &GrpcOptions::tls, &GrpcTls::cert_file>()},
    {"grpc-tls-key", "FILE", "the certificate's key (PEM)",
     text<&Settings::grpc, &GrpcOptions::tls, &GrpcTls::key_file>()},
    {"grpc-client-ca", "FILE", "mutual TLS: serve only clients with a certificate these CAs signed (PEM)",
     text<&Settings::grpc, &GrpcOptions::tls, &GrpcTls::client_ca_file>()},
    {"grpc-client-san", "NAME", "mutual TLS: and whose certificate holds this DNS name or IP address",
     text<&Settings::grpc, &GrpcOptions::tls, &GrpcTls::client_san>()},
    {"http", "HOST:PORT", "/healthcheck and /json (a RateLimitRequest as JSON), as envoyproxy/ratelimit's HTTP port",
     described(listener<false, &Settings::http>(),
               [](Settings&) {
                 return joinHostPort(std::string(kEveryInterface), settings::kEnvoyHttpPort) +
                        " with RUNTIME_*, else none";
               })},
    {"redis",
     "HOST:PORT|unix:PATH",
     "one Redis server",
     {[](Settings& s, const std::string& value, const std::string& given_as) {
        s.redis.topology = RedisTopology::single;
        s.redis.addresses = {addressOf(value, given_as, AddressOf::redis_server)};
      },
      [](Settings& s) { return s.redis.addresses.front().endpoint(); }}},
    {"redis-sentinel",
     "MASTER,HOST:PORT[,HOST:PORT...]",
     "the master the Sentinels at HOST:PORT know as MASTER, followed through failovers",
     {settings::applyRedisSentinel, none}},
    {"redis-cluster",
     "HOST:PORT[,HOST:PORT...]",
     "a Redis Cluster, found from these nodes",
     {settings::applyRedisCluster, none}},
    {"redis-user", "NAME", "the ACL user (Redis 6 and later)",
     text<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::user>()},
    {"redis-password", "SECRET", "AUTH's password; better given as the variable, which ps does not show",
     text<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::password>()},
    {"redis-sentinel-user", "NAME", "the Sentinels' own ACL user",
     text<&Settings::redis, &RedisSettings::sentinel_user>()},
    {"redis-sentinel-password", "SECRET", "the Sentinels' own password",
     text<&Settings::redis, &RedisSettings::sentinel_password>()},
    {"redis-db",
     "N",
     "the database SELECTed (not on a Cluster)",
     {[](Settings& s, const std::string& value, const std::string& given_as) {
        s.redis.connection.db = value == "0" ? 0 : static_cast<int>(settings::positiveNumber(value, given_as, 65535));
      },
      [](Settings& s) { return std::to_string(s.redis.connection.db); }}},
    {"redis-timeout", "MS", "how long one decision waits for Redis before the failure mode answers",
     milliseconds<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::command_timeout>()},
    {"redis-connect-timeout", "MS", "how long opening a connection may take",
     milliseconds<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::connect_timeout>()},
    {"redis-tls", "yes|no", "TLS to Redis (and to the Sentinels)",
     yesNo<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::tls, &TlsOptions::enabled>()},
    {"redis-tls-ca", "FILE", "the CAs that may vouch for Redis (PEM)",
     described(text<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::tls, &TlsOptions::ca_file>(),
               [](Settings&) -> std::string { return "the system's"; })},
    {"redis-tls-cert", "FILE", "a client certificate, for mutual TLS (PEM)",
     text<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::tls, &TlsOptions::cert_file>()},
    {"redis-tls-key", "FILE", "the client certificate's key (PEM)",
     text<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::tls, &TlsOptions::key_file>()},
    {"redis-tls-server-name", "NAME", "the name Redis's certificate must hold (and SNI)",
     described(text<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::tls, &TlsOptions::server_name>(),
               [](Settings&) -> std::string { return "the host"; })},
    {"pool-size", "N",
     "connections to Redis (per master on a Cluster), and threads serving calls on them, each deciding the calls that "
     "wait together",
     count<4096, &Settings::redis, &RedisSettings::pool_size>()},
    {"failure-mode", "open|closed", "what a request gets while Redis cannot answer",
     oneOf<kFailureModes, &Settings::decider, &DeciderOptions::on_failure>()},
    {"charge-descriptor-hits", "yes|no",
     "a descriptor's own hits_addend above 0 is a charge for units already spent (tokens): recorded even past "
     "the limit; default no",
     yesNo<&Settings::decider, &DeciderOptions::charge_descriptor_hits>()},
    {"reservations", "yes|no",
     "serve Kuadrant's Reserve and Commit: units held on the counters until committed or their ttl passes; "
     "every decision then releases the holds that ran out first, in Lua even where the swl-native module is "
     "loaded; default no",
     yesNo<&Settings::decider, &DeciderOptions::reservations>()},
    {"key-prefix",
     "P",
     "what every Redis key of the server starts with",
     {settings::applyKeyPrefix, text<&Settings::decider, &DeciderOptions::key_prefix>().show}},
    {"metrics", "HOST:PORT", "Prometheus metrics", listener<false, &Settings::metrics>()},
    {"metrics-path",
     "PATH",
     "where the metrics are served",
     {settings::applyMetricsPath, text<&Settings::metrics_path>().show}},
    {"statsd",
     "HOST:PORT",
     "send envoyproxy/ratelimit's statistics there, to statsd over UDP",
     {[](Settings& s, const std::string& value, const std::string& given_as) {
        const Address statsd = addressOf(value, given_as, AddressOf::server);
        s.statsd.host = statsd.host;
        s.statsd.port = statsd.port;
      },
      none}},
    {"stats-flush-interval", "MS", "how often the statistics are sent to statsd",
     milliseconds<&Settings::statsd, &StatsdOptions::flush_interval>()},
    {"statsd-tags",
     "KEY:VALUE[,...]",
     "tags every statsd name carries (envoyproxy/ratelimit's EXTRA_TAGS)",
     {settings::applyStatsdTags, none}},
    {"near-limit-ratio",
     "RATIO",
     "the share of a limit past which hits are also counted near_limit, in statsd",
     {settings::applyNearLimitRatio,
      [](Settings& s) {
        std::ostringstream ratio;
        ratio << s.statsd.near_limit_ratio;
        return ratio.str();
      }}},
    {"log-level",
     "error|warn|info|debug",
     "how much the log says",
     {settings::applyLogLevel, [](Settings& s) -> std::string { return nameOf(s.log.level); }}},
    {"log-format", "text|json", "a line of text per event, or a JSON object per line",
     oneOf<kLogFormats, &Settings::log, &LogOptions::format>()},
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
    flag->field.apply(settings, value, given_as(flag->name));
  }
}

Given fromEnvironment(const std::function<const char*(const char*)>& variable) {
  Given given;
  for (const Flag& flag : kFlags) {
    if (const char* value = variable(variableOf(flag.name).c_str())) given.emplace_back(&flag, value);
  }
  return given;
}

Given fromArguments(const std::vector<std::string>& arguments) {
  Given given;
  for (std::size_t i = 0; i < arguments.size(); i += 2) {
    const std::string& argument = arguments[i];
    const Flag* flag =
        argument.size() > 2 && argument.compare(0, 2, "--") == 0 ? flagNamed(argument.substr(2)) : nullptr;
    if (flag == nullptr) throw SettingsError("swl-ratelimit: unknown flag " + argument);
    if (i + 1 == arguments.size()) throw SettingsError("swl-ratelimit: " + argument + " needs a value");
    given.emplace_back(flag, arguments[i + 1]);
  }
  return given;
}

// gRPC's TLS files, each named as a flag and as envoyproxy/ratelimit's variable: what is given must be
// usable, never silently dropped.
void checkGrpcTls(const GrpcTls& tls) {
  constexpr const char* kCert = "--grpc-tls-cert (GRPC_SERVER_TLS_CERT)";
  constexpr const char* kKey = "--grpc-tls-key (GRPC_SERVER_TLS_KEY)";
  constexpr const char* kClientCa = "--grpc-client-ca (GRPC_CLIENT_TLS_CACERT)";
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    throw SettingsError("swl-ratelimit: " + std::string(tls.cert_file.empty() ? kKey : kCert) + " is given without " +
                        (tls.cert_file.empty() ? kCert : kKey) + ": TLS needs both, the certificate and its key");
  }
  if (!tls.client_ca_file.empty() && !tls.enabled()) {
    throw SettingsError("swl-ratelimit: " + std::string(kClientCa) + " needs TLS: give " + kCert + " and " + kKey);
  }
  if (!tls.client_san.empty() && tls.client_ca_file.empty()) {
    throw SettingsError("swl-ratelimit: --grpc-client-san (GRPC_CLIENT_TLS_SAN) needs " + std::string(kClientCa) +
                        ": a client certificate's name means something only once a CA vouched for it");
  }
}

// What no single flag or variable can check: the settings together.
void checkTogether(const Settings& settings) {
  if (settings.source.path.empty() && !settings.source.runtime && !settings.source.xds) {
    throw SettingsError(
        "swl-ratelimit: no configuration: give --config (or SWL_RATELIMIT_CONFIG), or envoyproxy/ratelimit's "
        "RUNTIME_ROOT and RUNTIME_SUBDIRECTORY, or CONFIG_TYPE=GRPC_XDS_SOTW and CONFIG_GRPC_XDS_SERVER_URL");
  }
  if (settings.redis.topology == RedisTopology::cluster && settings.redis.connection.db != 0) {
    throw SettingsError("swl-ratelimit: --redis-db " + std::to_string(settings.redis.connection.db) +
                        ": a Cluster has only database 0");
  }
  checkGrpcTls(settings.grpc.tls);
}

}  // namespace

Settings readSettings(const std::vector<std::string>& arguments,
                      const std::function<const char*(const char*)>& variable) {
  const Given from_environment = fromEnvironment(variable);
  const Given from_arguments = fromArguments(arguments);
  // Whether ours say where the configuration is decides whether envoyproxy's RUNTIME_* variables do.
  const auto givesConfig = [](const std::pair<const Flag*, std::string>& given) {
    return given.first->name == "config";
  };
  const bool ours_give_config = std::any_of(from_environment.begin(), from_environment.end(), givesConfig) ||
                                std::any_of(from_arguments.begin(), from_arguments.end(), givesConfig);

  Settings settings;
  const settings::EnvoyVariables envoy(variable);
  settings::applyEnvoyVariables(settings, envoy, ours_give_config);
  applyAll(settings, from_environment, [](std::string_view flag) { return variableOf(flag); });
  applyAll(settings, from_arguments, [](std::string_view flag) { return "--" + std::string(flag); });
  checkTogether(settings);
  settings::checkEnvoyVariables(settings, envoy);
  return settings;
}

std::string usageText() {
  std::ostringstream text;
  text << "usage: swl-ratelimit --config PATH [--flag value ...]\n";
  Settings defaults;
  for (const Flag& flag : kFlags) {
    const std::string left = "  --" + std::string(flag.name) + " " + std::string(flag.value);
    text << left << std::string(left.size() < 44 ? 44 - left.size() : 1, ' ') << flag.what;
    if (const std::string fallback = flag.field.show(defaults); !fallback.empty()) text << "; default " << fallback;
    text << "\n";
  }
  text << "Each flag may come from the environment instead: --redis-tls-ca as SWL_RATELIMIT_REDIS_TLS_CA, and so on;\n"
          "a flag wins over its variable. envoyproxy/ratelimit's variables (REDIS_URL, RUNTIME_ROOT, PORT, ...) are\n"
          "read too, and ours win over them; a setting of theirs that this server cannot apply stops it, naming it.\n"
          "docs/ratelimit.md says what becomes of each.\n";
  return text.str();
}

}  // namespace swl::ratelimit
