// envoyproxy/ratelimit's variables that swl-ratelimit does not apply: what would change what clients or
// operators get, and that it cannot do, stops the server, naming the variable; what is tuning of a
// mechanism it does not have (or of one it refuses) is named in the log at start, with why.

#include <ratelimit/settings/envoy.hpp>
#include <ratelimit/settings/values.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace swl::ratelimit::settings {

namespace {

// A variable that stops the server when it is true, and why.
struct RefusedWhenTrue {
  const char* name;
  const char* why;
};

constexpr RefusedWhenTrue kRefusedWhenTrue[] = {
    {"REDIS_PERSECOND",
     "swl-ratelimit keeps every counter in one Redis (REDIS_URL's); a second one for per-second limits is not "
     "supported"},
    {"USE_DOG_STATSD",
     "swl-ratelimit has no DogStatsD sink; its metrics are statsd's (USE_STATSD=true) or Prometheus's "
     "(USE_PROMETHEUS=true, or --metrics)"},
    {"TRACING_ENABLED", "swl-ratelimit exports no traces"},
    {"RESPONSE_DYNAMIC_METADATA",
     "swl-ratelimit adds no descriptors to its answers' dynamic metadata (only a reservation's id, --reservations)"},
    {"REDIS_HEALTH_CHECK_ACTIVE_CONNECTION",
     "swl-ratelimit answers while Redis is down, by its failure mode (--failure-mode), and stays healthy"},
};

// What swl-ratelimit takes instead of what a variable says, and why: each is tuning of a mechanism it
// does not have, or a part of one it refuses. Logged when given, so an operator sees them at start.
struct Ignored {
  const char* name;
  const char* why;
};

constexpr const char* kNoDebugListener =
    "swl-ratelimit has no debug listener (/rlconfig, /stats, pprof); its metrics are Prometheus's";
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
    {"USE_DOG_STATSD_MOGRIFIERS", "only with USE_DOG_STATSD=true, which swl-ratelimit refuses"},
    {"PROMETHEUS_MAPPER_YAML",
     "it maps envoyproxy/ratelimit's statsd names; swl-ratelimit's series have names of their own"},
    {"PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", "swl_decision_duration_seconds is in seconds, as Prometheus's are"},
    {"EXPIRATION_JITTER_MAX_SECONDS",
     "it spreads the expiry of envoyproxy's per-window keys; swl's keys expire when their window has passed"},
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

}  // namespace

void refuseWhatCannotApply(const EnvoyVariables& envoy) {
  if (const auto backend = envoy.text("BACKEND_TYPE"); backend && !backend->empty() && *backend != "redis") {
    throw wrong(
        "BACKEND_TYPE", *backend,
        *backend == "memcache" ? "swl-ratelimit counts in Redis only; memcache is not supported" : "expected redis");
  }
  if (const auto type = envoy.text("CONFIG_TYPE"); type && *type != "FILE" && *type != "GRPC_XDS_SOTW") {
    throw wrong("CONFIG_TYPE", *type, "expected FILE or GRPC_XDS_SOTW");
  }
  for (const RefusedWhenTrue& refused : kRefusedWhenTrue) {
    if (envoy.isTrue(refused.name)) throw wrong(refused.name, *envoy.text(refused.name), refused.why);
  }
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

void nameIgnored(Settings& settings, const EnvoyVariables& envoy) {
  for (const Ignored& ignored : kIgnored) {
    if (envoy.given(ignored.name)) settings.ignored.push_back(std::string(ignored.name) + ": " + ignored.why);
  }
}

}  // namespace swl::ratelimit::settings
