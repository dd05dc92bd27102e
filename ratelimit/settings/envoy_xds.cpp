// envoyproxy/ratelimit's xDS client's variables (its settings.go, CONFIG_GRPC_XDS_* and XDS_CLIENT_*),
// read when CONFIG_TYPE=GRPC_XDS_SOTW says the configuration comes from an xDS server: each that sets one
// field of XdsSource is a row of a table; the lists that go in a field read below it.

#include <ratelimit/settings/address.hpp>
#include <ratelimit/settings/envoy.hpp>
#include <ratelimit/settings/values.hpp>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace swl::ratelimit::settings {

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// A list of `name<separator>value` pairs, comma-separated: kelseyhightower/envconfig's map for the
// headers (':'), the client's own split for the node's metadata ('='), which passes over an entry
// without one.
Pairs pairsOf(const std::string& value, char separator, bool refuse_lone, const char* name) {
  Pairs pairs;
  for (const std::string_view entry : commaSeparated(value)) {
    const std::size_t at = entry.find(separator);
    if (at == std::string_view::npos) {
      if (!refuse_lone) continue;
      throw wrong(name, value, std::string("expected name") + separator + "value pairs, comma-separated");
    }
    pairs.emplace_back(std::string(entry.substr(0, at)), std::string(entry.substr(at + 1)));
  }
  return pairs;
}

struct XdsVariable {
  const char* name;
  void (*apply)(XdsSource& xds, const std::string& value, const char* name);
};

std::chrono::milliseconds goMilliseconds(const char* name, const std::string& value) {
  return std::chrono::ceil<std::chrono::milliseconds>(goDuration(name, value));
}

constexpr XdsVariable kXds[] = {
    {"CONFIG_GRPC_XDS_SERVER_URL", [](XdsSource& x, const std::string& v, const char*) { x.server = v; }},
    {"CONFIG_GRPC_XDS_NODE_ID", [](XdsSource& x, const std::string& v, const char*) { x.node_id = v; }},
    {"CONFIG_GRPC_XDS_NODE_METADATA",
     [](XdsSource& x, const std::string& v, const char* n) { x.node_metadata = pairsOf(v, '=', false, n); }},
    {"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS",
     [](XdsSource& x, const std::string& v, const char* n) { x.headers = pairsOf(v, ':', true, n); }},
    {"CONFIG_GRPC_XDS_SERVER_USE_TLS",
     [](XdsSource& x, const std::string& v, const char* n) { x.tls = goBoolean(n, v); }},
    {"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", [](XdsSource& x, const std::string& v, const char*) { x.server_ca = v; }},
    {"CONFIG_GRPC_XDS_CLIENT_TLS_CERT",
     [](XdsSource& x, const std::string& v, const char*) { x.client_certificate = v; }},
    {"CONFIG_GRPC_XDS_CLIENT_TLS_KEY", [](XdsSource& x, const std::string& v, const char*) { x.client_key = v; }},
    {"CONFIG_GRPC_XDS_SERVER_TLS_SAN", [](XdsSource& x, const std::string& v, const char*) { x.server_name = v; }},
    {"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL",
     [](XdsSource& x, const std::string& v, const char* n) { x.connect_retry = goMilliseconds(n, v); }},
    {"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL",
     [](XdsSource& x, const std::string& v, const char* n) { x.backoff_initial = goMilliseconds(n, v); }},
    {"XDS_CLIENT_BACKOFF_MAX_INTERVAL",
     [](XdsSource& x, const std::string& v, const char* n) { x.backoff_most = goMilliseconds(n, v); }},
    {"XDS_CLIENT_BACKOFF_RANDOM_FACTOR",
     [](XdsSource& x, const std::string& v, const char* n) {
       char* end = nullptr;
       const double factor = std::strtod(v.c_str(), &end);
       if (v.empty() || *end != '\0' || !std::isfinite(factor) || factor < 0 || factor > 1) {
         throw wrong(n, v, "expected a number from 0 to 1");
       }
       x.backoff_random_factor = factor;
     }},
    {"XDS_CLIENT_BACKOFF_JITTER",
     [](XdsSource& x, const std::string& v, const char* n) { x.backoff_jitter = goBoolean(n, v); }},
    {"XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES",
     [](XdsSource& x, const std::string& v, const char* n) {
       const auto bytes = numberBetween(v, 0, std::numeric_limits<int>::max());
       if (!bytes) throw wrong(n, v, "expected a number of bytes (0: gRPC's own limit)");
       x.max_message_bytes = static_cast<int>(*bytes);
     }},
    {"FORCE_START_WITHOUT_INITIAL_CONFIG",
     [](XdsSource& x, const std::string& v, const char* n) { x.force_start = goBoolean(n, v); }},
};

}  // namespace

bool configFromXds(const EnvoyVariables& envoy) { return envoy.text("CONFIG_TYPE").value_or("") == "GRPC_XDS_SOTW"; }

void applyEnvoyXds(Settings& settings, const EnvoyVariables& envoy) {
  XdsSource xds;
  for (const XdsVariable& variable : kXds) {
    if (const auto value = envoy.text(variable.name)) variable.apply(xds, *value, variable.name);
  }
  addressOf(xds.server, "CONFIG_GRPC_XDS_SERVER_URL", AddressOf::server);
  if (xds.client_certificate.empty() != xds.client_key.empty()) {
    throw SettingsError(
        "swl-ratelimit: CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY go together; " +
        std::string(xds.client_key.empty() ? "the key" : "the certificate") + " is not given");
  }
  if (xds.backoff_most < xds.backoff_initial) {
    throw SettingsError("swl-ratelimit: XDS_CLIENT_BACKOFF_MAX_INTERVAL is below XDS_CLIENT_BACKOFF_INITIAL_INTERVAL");
  }
  settings.source.xds = std::move(xds);
}

void nameIgnoredXds(Settings& settings, const EnvoyVariables& envoy) {
  for (const XdsVariable& variable : kXds) {
    if (envoy.given(variable.name)) {
      settings.ignored.push_back(std::string(variable.name) + ": only with CONFIG_TYPE=GRPC_XDS_SOTW");
    }
  }
}

}  // namespace swl::ratelimit::settings
