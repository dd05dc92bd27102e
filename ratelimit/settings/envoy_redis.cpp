// Where envoyproxy/ratelimit's variables say Redis is: REDIS_TYPE (single, sentinel, cluster),
// REDIS_SOCKET_TYPE (unix or tcp, for one server) and REDIS_URL in the format of its type, read as
// envoyproxy/ratelimit's radix client reads them. A password never appears in a message.

#include <ratelimit/settings/address.hpp>
#include <ratelimit/settings/envoy.hpp>
#include <ratelimit/settings/values.hpp>

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace swl::ratelimit::settings {

namespace {

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

// One Redis server's REDIS_URL written as radix reads it: redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]
// [?db=N&username=U&password=P], Redis's own port (kRedisPort) when none is written.
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
  if (!has_port) address += ":" + std::to_string(kRedisPort);
  settings.redis.topology = RedisTopology::single;
  settings.redis.addresses = {addressOf(address, given_as, AddressOf::redis_node)};
}

// REDIS_SOCKET_TYPE=unix: REDIS_URL is a socket's path.
void applyRedisSocket(Settings& settings, const std::string& url, const std::string& shown,
                      const std::string& socket_named) {
  if (url.empty()) throw wrong("REDIS_URL", "", "expected a unix socket's path, as REDIS_SOCKET_TYPE is unix");
  if (url.rfind("redis://", 0) == 0) {
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
}

// REDIS_SOCKET_TYPE=tcp (tcp4, tcp6): REDIS_URL is HOST:PORT, or a redis:// URL.
void applyRedisTcp(Settings& settings, const std::string& url, const std::string& shown, const std::string& socket) {
  if (url.rfind("redis://", 0) == 0) {
    applyRedisUrl(settings, url);
  } else if (url.rfind("unix:", 0) == 0 || url.find("://") != std::string::npos) {
    throw wrong("REDIS_URL", shown, "expected HOST:PORT or redis://HOST:PORT, as REDIS_SOCKET_TYPE is " + socket);
  } else {
    settings.redis.topology = RedisTopology::single;
    settings.redis.addresses = {addressOf(url, "REDIS_URL", AddressOf::redis_node)};
  }
}

// REDIS_TYPE=single: REDIS_URL in the format of REDIS_SOCKET_TYPE.
void applySingleRedis(Settings& settings, const EnvoyVariables& envoy, const std::string& url,
                      const std::string& shown) {
  const std::string socket = envoy.text("REDIS_SOCKET_TYPE").value_or("unix");
  if (socket == "unix") {
    applyRedisSocket(
        settings, url, shown,
        envoy.given("REDIS_SOCKET_TYPE") ? "REDIS_SOCKET_TYPE is unix" : "REDIS_SOCKET_TYPE is unix (its default)");
  } else if (socket == "tcp" || socket == "tcp4" || socket == "tcp6") {
    applyRedisTcp(settings, url, shown, socket);
  } else {
    throw wrong("REDIS_SOCKET_TYPE", socket, "expected tcp or unix");
  }
}

}  // namespace

std::pair<std::string, std::string> userAndPassword(const std::string& auth) {
  const auto colon = auth.find(':');
  if (colon == std::string::npos) return {"", auth};
  return {auth.substr(0, colon), auth.substr(colon + 1)};
}

void applyEnvoyRedisAddress(Settings& settings, const EnvoyVariables& envoy) {
  const std::string type = lowerCase(envoy.text("REDIS_TYPE").value_or("single"));
  const std::string url = envoy.text("REDIS_URL").value_or("/var/run/nutcracker/ratelimit.sock");
  const std::string shown = withoutPassword(url);
  if ((type == "sentinel" || type == "cluster") && url.find("://") != std::string::npos) {
    throw wrong("REDIS_URL", shown,
                "with REDIS_TYPE=" + type + ", expected HOST:PORT addresses (credentials go in REDIS_AUTH)");
  }
  if (type == "sentinel") {
    applyRedisSentinel(settings, url, "REDIS_URL", shown, "with REDIS_TYPE=sentinel, ", " (MASTER,HOST:PORT,...)");
  } else if (type == "cluster") {
    applyRedisCluster(settings, url, "REDIS_URL");
  } else if (type == "single") {
    applySingleRedis(settings, envoy, url, shown);
  } else {
    throw wrong("REDIS_TYPE", *envoy.text("REDIS_TYPE"), "expected single, sentinel or cluster");
  }
}

}  // namespace swl::ratelimit::settings
