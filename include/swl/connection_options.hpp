#pragma once
// ConnectionOptions: how every kind of connection (blocking, pooled, async) reaches and greets Redis,
// and the checks they all apply to their endpoint and options before anything is dialled.

#include <swl/error.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace swl {

struct ConnectionOptions {
  std::chrono::milliseconds connect_timeout{1000};
  // How long a command may wait for its reply. A command that times out may still have run on the
  // server, so it is reported (TimeoutError), never sent again.
  std::chrono::milliseconds command_timeout{1000};
  // After a failed connect, commands fail at once with the last error until this much time has passed.
  std::chrono::milliseconds reconnect_interval{100};
  std::string user;      // ACL user (Redis 6+); empty for the default user
  std::string password;  // empty: no AUTH
  int db = 0;            // SELECTed after every (re)connect when not 0
};

namespace detail {

inline void checkOptions(const ConnectionOptions& options) {
  if (options.connect_timeout.count() < 0 || options.command_timeout.count() < 0 ||
      options.reconnect_interval.count() < 0) {
    throw InvalidArgument("swl::ConnectionOptions: timeouts and reconnect_interval must not be negative");
  }
  if (options.db < 0)
    throw InvalidArgument("swl::ConnectionOptions: db " + std::to_string(options.db) + " is negative");
  if (!options.user.empty() && options.password.empty()) {
    throw InvalidArgument("swl::ConnectionOptions: user '" + options.user + "' is given without a password");
  }
}

// `who` names the factory in the message, e.g. "swl::Connection::tcp".
inline std::string tcpEndpoint(std::string_view who, const std::string& host, int port) {
  if (host.empty()) throw InvalidArgument(std::string(who) + ": host is empty");
  if (port <= 0 || port > 65535) {
    throw InvalidArgument(std::string(who) + ": port " + std::to_string(port) + " is not in 1..65535");
  }
  return host + ':' + std::to_string(port);
}

inline std::string unixEndpoint(std::string_view who, const std::string& path) {
  if (path.empty()) throw InvalidArgument(std::string(who) + ": path is empty");
  return "unix:" + path;
}

}  // namespace detail
}  // namespace swl
