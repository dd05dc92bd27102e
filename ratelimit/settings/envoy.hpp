#pragma once
/// \file
/// envoyproxy/ratelimit's variables (its src/settings/settings.go), read as it reads them, private to
/// settings/: envoy.cpp applies those that set one field each from a table, reads those that go
/// together, refuses what cannot apply and names what is ignored; envoy_redis.cpp reads where Redis is.

#include <ratelimit/settings/settings.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace swl::ratelimit::settings {

/// envoyproxy/ratelimit's HTTP port (PORT's default; HOST's is every interface), on in its mode only.
inline constexpr int kEnvoyHttpPort = 8080;

/// strconv.ParseBool's boolean, or a SettingsError naming `name`.
bool goBoolean(const char* name, const std::string& value);
/// time.ParseDuration's duration, or a SettingsError naming `name`.
std::chrono::nanoseconds goDuration(const char* name, const std::string& value);

/// Its variables, as kelseyhightower/envconfig reads them: a variable set to "" is set, so a boolean, a
/// number or a duration given empty is as wrong as one given "maybe".
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
    return goBoolean(name, *value);
  }

  bool isTrue(const char* name) const { return boolean(name).value_or(false); }

  std::optional<std::int64_t> whole(const char* name, std::int64_t least, std::int64_t most) const;

 private:
  const std::function<const char*(const char*)>* variable_;
};

/// Reads envoyproxy/ratelimit's variables into `settings`; `ours_give_config`: --config or
/// SWL_RATELIMIT_CONFIG is given, and its runtime directory is not read. What cannot apply is a
/// SettingsError.
void applyEnvoyVariables(Settings& settings, const EnvoyVariables& envoy, bool ours_give_config);

/// Checks what envoyproxy/ratelimit's variables ask of `settings` once every source has given its own.
void checkEnvoyVariables(const Settings& settings, const EnvoyVariables& envoy);

/// What would change what clients or operators get, and that swl-ratelimit cannot do: a SettingsError,
/// which stops the server. (envoy_refused.cpp)
void refuseWhatCannotApply(const EnvoyVariables& envoy);

/// The variables given that do nothing here, each with why, into `settings.ignored`. (envoy_refused.cpp)
void nameIgnored(Settings& settings, const EnvoyVariables& envoy);

/// Whether CONFIG_TYPE=GRPC_XDS_SOTW says the configuration comes from an xDS server. (envoy_xds.cpp)
bool configFromXds(const EnvoyVariables& envoy);
/// The xDS client's variables, into `settings.source.xds`. (envoy_xds.cpp)
void applyEnvoyXds(Settings& settings, const EnvoyVariables& envoy);
/// The xDS client's variables given without CONFIG_TYPE=GRPC_XDS_SOTW, into `settings.ignored`.
void nameIgnoredXds(Settings& settings, const EnvoyVariables& envoy);

/// USE_STATSD and what comes with it (STATSD_HOST, STATSD_PORT, EXTRA_TAGS, STATS_FLUSH_INTERVAL,
/// NEAR_LIMIT_RATIO), into `settings.statsd`; without it, named as ignored. (envoy_statsd.cpp)
void applyEnvoyStatsd(Settings& settings, const EnvoyVariables& envoy);

/// REDIS_TYPE, REDIS_SOCKET_TYPE and REDIS_URL: where Redis is, in the format of its type. (envoy_redis.cpp)
void applyEnvoyRedisAddress(Settings& settings, const EnvoyVariables& envoy);

/// REDIS_AUTH and REDIS_SENTINEL_AUTH: "password", or "user:password" (split at the first colon, as Go's
/// strings.Cut does). (envoy_redis.cpp)
std::pair<std::string, std::string> userAndPassword(const std::string& auth);

}  // namespace swl::ratelimit::settings
