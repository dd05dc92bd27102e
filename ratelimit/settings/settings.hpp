#pragma once
/// \file
/// How swl-ratelimit is run: its flags and their environment variables, and envoyproxy/ratelimit's own
/// variables (so that a manifest written for that server runs this one), read into Settings. Settings
/// hold each part's own options whole (where the configuration is, Redis, how to decide, how to serve
/// gRPC, how to log), so that the server hands each part its own; each default is written once, where
/// its field is declared, and the usage text shows it from there.
///
/// One table of flags (flags.cpp) gives the parser, the variables' names and the usage text; another
/// says what becomes of each of envoyproxy/ratelimit's variables: applied to its field, ignored (and
/// why), or refused (envoy.cpp, envoy_redis.cpp). Reading settings does no I/O: every file they name is
/// opened later, by what uses it.

#include <ratelimit/config/source.hpp>
#include <ratelimit/decide/options.hpp>
#include <ratelimit/serve/options.hpp>
#include <ratelimit/settings/redis.hpp>
#include <ratelimit/telemetry/log.hpp>
#include <ratelimit/telemetry/statsd.hpp>

#include <swl/error.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace swl::ratelimit {

/// A flag or variable that is wrong: its message names it and says what it takes.
class SettingsError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// Everything the server is told at start.
struct Settings {
  /// Where the configuration is read from: --config, or envoyproxy/ratelimit's runtime directory when its
  /// variables give it and --config does not; MERGE_DOMAIN_CONFIG.
  ConfigSource source;
  /// Whether a change of the configuration's files reloads it, as SIGHUP does. Unset: yes with the
  /// runtime directory (envoyproxy/ratelimit always watches), no with --config (whose operators send
  /// SIGHUP).
  std::optional<bool> watch;
  RedisSettings redis;
  /// How requests are decided: the key prefix, the failure mode, SHADOW_MODE, QUOTA_MODE and the
  /// LIMIT_* headers.
  DeciderOptions decider;
  /// The gRPC address, and GRPC_MAX_CONNECTION_AGE(_GRACE).
  GrpcOptions grpc;
  /// HOST:PORT for /healthcheck and /json; none when empty.
  std::string http;
  std::string metrics;  ///< HOST:PORT for Prometheus's metrics; none when empty
  std::string metrics_path = "/metrics";
  /// envoyproxy/ratelimit's statistics over statsd (USE_STATSD=true, or --statsd); none when its host is empty.
  StatsdOptions statsd;
  /// HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: /healthcheck fails while the configuration in force has no
  /// domain.
  bool healthy_only_with_a_domain = false;
  LogOptions log;
  /// envoyproxy/ratelimit's variables that were given and do nothing here, each with why: for the log.
  std::vector<std::string> ignored;

  /// Whether the configuration's files are watched: as `watch` says, else with the runtime directory.
  bool watched() const { return watch.value_or(source.runtime.has_value()); }
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

}  // namespace swl::ratelimit
