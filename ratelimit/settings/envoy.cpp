// envoyproxy/ratelimit's variables that swl-ratelimit applies. Each that sets one field is a row of a
// table (its name, how Go reads it, the field it sets), and one loop applies the rows given; a variable
// not given leaves its field at its default, which the field's declaration holds. Those that go
// together (the runtime directory's mode, the listeners, Prometheus) are read below the tables; statsd's,
// by envoy_statsd.cpp. What cannot apply is refused, and what does nothing here named, by
// envoy_refused.cpp; where Redis is, by envoy_redis.cpp.

#include <ratelimit/settings/address.hpp>
#include <ratelimit/settings/envoy.hpp>
#include <ratelimit/settings/go_values.hpp>
#include <ratelimit/settings/values.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <tuple>

namespace swl::ratelimit::settings {

bool goBoolean(const char* name, const std::string& value) {
  if (const auto parsed = parseGoBool(value)) return *parsed;
  throw wrong(name, value,
              "expected a boolean as Go reads one: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false or False");
}

std::chrono::nanoseconds goDuration(const char* name, const std::string& value) {
  if (const auto parsed = parseGoDuration(value)) return *parsed;
  throw wrong(name, value, "expected a duration as Go reads one: 300ms, 10s, 1.5h or 2h45m, say");
}

std::optional<std::int64_t> EnvoyVariables::whole(const char* name, std::int64_t least, std::int64_t most) const {
  const auto value = text(name);
  if (!value) return std::nullopt;
  if (const auto parsed = numberBetween(*value, least, most)) return parsed;
  throw wrong(name, *value, "expected a whole number from " + std::to_string(least) + " to " + std::to_string(most));
}

namespace {

// One variable that sets one field of a Target: its name, and how its value becomes the field.
template <class Target>
struct Variable {
  const char* name;
  void (*apply)(Target& target, const std::string& value, const char* name);
};

template <auto first, auto... rest>
struct PathOwner {
  using type = typename OwnerOf<decltype(first)>::type;
};

// How a value is read, by its Go type, into the field its members name (fieldAt).
template <auto... path>
void text(typename PathOwner<path...>::type& target, const std::string& value, const char*) {
  fieldAt<path...>(target) = value;
}

template <auto... path>
void boolean(typename PathOwner<path...>::type& target, const std::string& value, const char* name) {
  fieldAt<path...>(target) = goBoolean(name, value);
}

template <auto... path>
void duration(typename PathOwner<path...>::type& target, const std::string& value, const char* name) {
  fieldAt<path...>(target) = std::chrono::ceil<std::chrono::milliseconds>(goDuration(name, value));
}

// A file's path, which envoyproxy/ratelimit takes only when it is not empty.
template <auto... path>
void file(typename PathOwner<path...>::type& target, const std::string& value, const char*) {
  if (!value.empty()) fieldAt<path...>(target) = value;
}

template <auto... path>
void header(typename PathOwner<path...>::type& target, const std::string& value, const char* name) {
  if (value.empty()) throw wrong(name, "", "expected a header's name");
  fieldAt<path...>(target) = value;
}

constexpr Variable<Settings> kFields[] = {
    {"MERGE_DOMAIN_CONFIG", boolean<&Settings::source, &ConfigSource::merge_domains>},
    {"GRPC_MAX_CONNECTION_AGE", duration<&Settings::grpc, &GrpcOptions::max_connection_age>},
    {"GRPC_MAX_CONNECTION_AGE_GRACE", duration<&Settings::grpc, &GrpcOptions::max_connection_age_grace>},
    // REDIS_AUTH wins over a redis:// URL's user and password, as in envoyproxy/ratelimit: the table is
    // applied after REDIS_URL.
    {"REDIS_AUTH",
     [](Settings& s, const std::string& auth, const char*) {
       if (!auth.empty()) std::tie(s.redis.connection.user, s.redis.connection.password) = userAndPassword(auth);
     }},
    {"REDIS_SENTINEL_AUTH",
     [](Settings& s, const std::string& auth, const char*) {
       if (!auth.empty()) std::tie(s.redis.sentinel_user, s.redis.sentinel_password) = userAndPassword(auth);
     }},
    {"REDIS_TLS", boolean<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::tls, &TlsOptions::enabled>},
    {"REDIS_TLS_CLIENT_CERT",
     file<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::tls, &TlsOptions::cert_file>},
    {"REDIS_TLS_CLIENT_KEY",
     file<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::tls, &TlsOptions::key_file>},
    {"REDIS_TLS_CACERT",
     file<&Settings::redis, &RedisSettings::connection, &ConnectionOptions::tls, &TlsOptions::ca_file>},
    // It is radix's dial timeout: how long connecting may take (0 or less: as long as the OS lets it). A
    // decision's own wait is SWL_RATELIMIT_REDIS_TIMEOUT's, milliseconds, which the failure mode relies on.
    {"REDIS_TIMEOUT",
     [](Settings& s, const std::string& value, const char* name) {
       const auto rounded_up = std::chrono::ceil<std::chrono::milliseconds>(goDuration(name, value));
       s.redis.connection.connect_timeout = rounded_up.count() > 0 ? rounded_up : std::chrono::milliseconds(0);
     }},
    {"CACHE_KEY_PREFIX",
     [](Settings& s, const std::string& prefix, const char* name) {
       if (!prefix.empty()) applyKeyPrefix(s, prefix, name);
     }},
    {"LOG_LEVEL", [](Settings& s, const std::string& level, const char* name) { applyLogLevel(s, level, name); }},
    // Any format but json is text, in any case, as in envoyproxy/ratelimit.
    {"LOG_FORMAT", [](Settings& s, const std::string& format,
                      const char*) { s.log.format = lowerCase(format) == "json" ? LogFormat::json : LogFormat::text; }},
    {"SHADOW_MODE", boolean<&Settings::decider, &DeciderOptions::shadow_mode>},
    {"QUOTA_MODE", boolean<&Settings::decider, &DeciderOptions::quota_mode>},
    {"LIMIT_RESPONSE_HEADERS_ENABLED",
     boolean<&Settings::decider, &DeciderOptions::limit_headers, &LimitHeaders::enabled>},
    {"LIMIT_LIMIT_HEADER", header<&Settings::decider, &DeciderOptions::limit_headers, &LimitHeaders::limit>},
    {"LIMIT_REMAINING_HEADER", header<&Settings::decider, &DeciderOptions::limit_headers, &LimitHeaders::remaining>},
    {"LIMIT_RESET_HEADER", header<&Settings::decider, &DeciderOptions::limit_headers, &LimitHeaders::reset>},
    {"HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", boolean<&Settings::healthy_only_with_a_domain>},
};

// The runtime directory's, read in envoyproxy's mode only (RUNTIME_ROOT's default is its own).
constexpr Variable<RuntimeDirectory> kRuntime[] = {
    {"RUNTIME_ROOT", text<&RuntimeDirectory::root>},
    {"RUNTIME_SUBDIRECTORY", text<&RuntimeDirectory::subdirectory>},
    {"RUNTIME_APPDIRECTORY", text<&RuntimeDirectory::app_directory>},
    {"RUNTIME_WATCH_ROOT", boolean<&RuntimeDirectory::watch_root>},
    {"RUNTIME_IGNOREDOTFILES", boolean<&RuntimeDirectory::ignore_dot_files>},
};

// The one loop: each variable of `table` that is given, into its field of `target`.
template <class Target, std::size_t count>
void applyGiven(Target& target, const Variable<Target> (&table)[count], const EnvoyVariables& envoy) {
  for (const Variable<Target>& variable : table) {
    if (const auto value = envoy.text(variable.name)) variable.apply(target, *value, variable.name);
  }
}

void applyEnvoyRuntime(Settings& settings, const EnvoyVariables& envoy) {
  RuntimeDirectory runtime;
  applyGiven(runtime, kRuntime, envoy);
  if (runtime.root.empty()) throw wrong("RUNTIME_ROOT", "", "expected the directory of the runtime's files");
  if (runtime.watch_root && runtime.subdirectory.empty()) {
    throw SettingsError(
        "swl-ratelimit: RUNTIME_SUBDIRECTORY is not set: with RUNTIME_WATCH_ROOT=true (its default), envoyproxy/"
        "ratelimit then reads no file at all; set it (the files are RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/"
        "RUNTIME_APPDIRECTORY), or RUNTIME_WATCH_ROOT=false");
  }
  settings.source.runtime = runtime;
}

void applyEnvoyListeners(Settings& settings, const EnvoyVariables& envoy, bool envoy_mode) {
  if (const auto uds = envoy.text("GRPC_UDS"); uds && !uds->empty()) {
    settings.grpc.listen = "unix:" + *uds;
  } else if (envoy.given("GRPC_HOST") || envoy.given("GRPC_PORT")) {
    // GRPC_HOST's and GRPC_PORT's defaults are those of the gRPC address.
    const Address fallback = addressOf(GrpcOptions{}.listen, "--listen", AddressOf::listener);
    const auto port = envoy.whole("GRPC_PORT", 0, 65535).value_or(fallback.port);
    settings.grpc.listen = joinHostPort(envoy.text("GRPC_HOST").value_or(fallback.host), port);
    addressOf(settings.grpc.listen, "GRPC_HOST and GRPC_PORT", AddressOf::listener);
  }
  if (envoy.given("HOST") || envoy.given("PORT")) {
    const auto port = envoy.whole("PORT", 0, 65535).value_or(kEnvoyHttpPort);
    settings.http = joinHostPort(envoy.text("HOST").value_or(std::string(kEveryInterface)), port);
    addressOf(settings.http, "HOST and PORT", AddressOf::listener);
  } else if (envoy_mode) {
    settings.http = joinHostPort(std::string(kEveryInterface), kEnvoyHttpPort);  // always on in envoyproxy's
  }
}

void applyEnvoyPrometheus(Settings& settings, const EnvoyVariables& envoy) {
  if (envoy.isTrue("USE_PROMETHEUS") && !envoy.isTrue("DISABLE_STATS")) {
    std::string address = envoy.text("PROMETHEUS_ADDR").value_or(":9090");
    if (!address.empty() && address.front() == ':') address = std::string(kEveryInterface) + address;
    addressOf(address, "PROMETHEUS_ADDR", AddressOf::listener);
    settings.metrics = address;
    if (const auto path = envoy.text("PROMETHEUS_PATH")) applyMetricsPath(settings, *path, "PROMETHEUS_PATH");
    return;
  }
  for (const char* name : {"PROMETHEUS_ADDR", "PROMETHEUS_PATH"}) {
    if (envoy.given(name)) {
      settings.ignored.push_back(std::string(name) + ": only with USE_PROMETHEUS=true (and DISABLE_STATS not true)");
    }
  }
}

// gRPC over TLS, read only with GRPC_SERVER_USE_TLS=true, as envoyproxy/ratelimit reads them. The
// client CA is GRPC_CLIENT_TLS_CACERT, or Envoy Gateway's GRPC_SERVER_TLS_CA_CERT (which envoyproxy does
// not read): envoyproxy's own name, applied after it, wins.
constexpr Variable<GrpcTls> kGrpcTls[] = {
    {"GRPC_SERVER_TLS_CERT", file<&GrpcTls::cert_file>},
    {"GRPC_SERVER_TLS_KEY", file<&GrpcTls::key_file>},
    {"GRPC_SERVER_TLS_CA_CERT", file<&GrpcTls::client_ca_file>},
    {"GRPC_CLIENT_TLS_CACERT", file<&GrpcTls::client_ca_file>},
    {"GRPC_CLIENT_TLS_SAN", text<&GrpcTls::client_san>},
};

void applyEnvoyGrpcTls(Settings& settings, const EnvoyVariables& envoy) {
  if (!envoy.isTrue("GRPC_SERVER_USE_TLS")) {
    for (const Variable<GrpcTls>& variable : kGrpcTls) {
      if (!envoy.given(variable.name)) continue;
      settings.ignored.push_back(std::string(variable.name) + ": only with GRPC_SERVER_USE_TLS=true");
    }
    return;
  }
  applyGiven(settings.grpc.tls, kGrpcTls, envoy);
  const std::string gateways = envoy.text("GRPC_SERVER_TLS_CA_CERT").value_or("");
  if (!gateways.empty() && gateways != settings.grpc.tls.client_ca_file) {
    settings.ignored.push_back(
        "GRPC_SERVER_TLS_CA_CERT: GRPC_CLIENT_TLS_CACERT, envoyproxy/ratelimit's name, is given too and wins");
  }
}

}  // namespace

void applyEnvoyVariables(Settings& settings, const EnvoyVariables& envoy, bool ours_give_config) {
  refuseWhatCannotApply(envoy);
  const bool runtime_given =
      std::any_of(std::begin(kRuntime), std::end(kRuntime),
                  [&](const Variable<RuntimeDirectory>& each) { return envoy.given(each.name); });
  // The configuration comes from --config, else from the xDS server CONFIG_TYPE names, else from the
  // runtime directory; envoyproxy's listeners come with either of its own.
  const bool from_xds = configFromXds(envoy) && !ours_give_config;
  const bool envoy_mode = (runtime_given || from_xds) && !ours_give_config;
  if (from_xds) {
    applyEnvoyXds(settings, envoy);
    if (runtime_given) settings.ignored.push_back("RUNTIME_*: the configuration comes from the xDS server");
  } else {
    nameIgnoredXds(settings, envoy);
    if (envoy_mode) applyEnvoyRuntime(settings, envoy);
  }
  if ((runtime_given || configFromXds(envoy)) && ours_give_config) {
    settings.ignored.push_back(
        "RUNTIME_* and CONFIG_TYPE: --config (or SWL_RATELIMIT_CONFIG) says where the configuration is");
  }
  applyEnvoyListeners(settings, envoy, envoy_mode);
  // Where Redis is: REDIS_URL's, or its default where envoyproxy's settings run the server.
  if (envoy.given("REDIS_URL") || envoy_mode) {
    applyEnvoyRedisAddress(settings, envoy);
  } else {
    for (const char* name : {"REDIS_TYPE", "REDIS_SOCKET_TYPE"}) {
      if (envoy.given(name)) settings.ignored.push_back(std::string(name) + ": only with REDIS_URL");
    }
  }
  applyGiven(settings, kFields, envoy);
  applyEnvoyPrometheus(settings, envoy);
  applyEnvoyStatsd(settings, envoy);
  applyEnvoyGrpcTls(settings, envoy);
  nameIgnored(settings, envoy);
}

void checkEnvoyVariables(const Settings& settings, const EnvoyVariables& envoy) {
  // Go checks the certificate's chain without its name; swl's TLS checks both or neither. With the name
  // given, both are checked against it, and nothing is accepted that the operator did not name.
  if (envoy.isTrue("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION") && settings.redis.connection.tls.enabled &&
      settings.redis.connection.tls.server_name.empty()) {
    throw wrong("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", *envoy.text("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION"),
                "swl-ratelimit checks Redis's certificate whole, its name too: give the name it holds as "
                "SWL_RATELIMIT_REDIS_TLS_SERVER_NAME");
  }
  // envoyproxy/ratelimit cannot start without them either (cert_provider.go); ours may give them.
  const GrpcTls& tls = settings.grpc.tls;
  if (envoy.isTrue("GRPC_SERVER_USE_TLS") && tls.cert_file.empty() && tls.key_file.empty()) {
    throw wrong("GRPC_SERVER_USE_TLS", *envoy.text("GRPC_SERVER_USE_TLS"),
                "TLS needs a certificate and its key: give GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY");
  }
}

}  // namespace swl::ratelimit::settings
