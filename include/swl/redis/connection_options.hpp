#pragma once
// Where a Redis listens (Address) and how every kind of connection reaches and greets it
// (ConnectionOptions): blocking, pooled, cluster nodes, Sentinel's and async connections all take these,
// and all dial through one function (redis/dial.hpp).

#include <swl/error.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>

namespace swl {

// A TCP host and port, or, with `unix_path` set, a unix socket. Braces make a TCP one: {"10.0.0.1", 6379}.
struct Address {
  std::string host;
  int port = 0;
  std::string unix_path = {};  // a default, so that {host, port} leaves it out without a warning

  static Address unixSocket(std::string path) {
    Address address;
    address.unix_path = std::move(path);
    return address;
  }

  // "host:port" or "unix:/path": how every message names the server.
  std::string endpoint() const { return unix_path.empty() ? host + ':' + std::to_string(port) : "unix:" + unix_path; }
};

struct ConnectionOptions {
  // How long opening a connection may take; 0 waits as long as the operating system does.
  std::chrono::milliseconds connect_timeout{1000};
  // How long a command may wait for its reply; 0 waits forever. A command that times out may still
  // have run on the server, so it is reported (TimeoutError), never sent again.
  std::chrono::milliseconds command_timeout{1000};
  // After a failed connect, commands fail at once with the last error until this much time has passed.
  std::chrono::milliseconds reconnect_interval{100};
  std::string user;      // ACL user (Redis 6+); empty for the default user
  std::string password;  // empty: no AUTH
  int db = 0;            // SELECTed after every (re)connect when not 0
};

namespace detail {

inline const ConnectionOptions& checkedOptions(const ConnectionOptions& options) {
  if (options.connect_timeout.count() < 0 || options.command_timeout.count() < 0 ||
      options.reconnect_interval.count() < 0) {
    throw InvalidArgument("swl::ConnectionOptions: timeouts and reconnect_interval must not be negative");
  }
  if (options.db < 0)
    throw InvalidArgument("swl::ConnectionOptions: db " + std::to_string(options.db) + " is negative");
  if (!options.user.empty() && options.password.empty()) {
    throw InvalidArgument("swl::ConnectionOptions: user " + quoted(options.user) + " is given without a password");
  }
  return options;
}

// `who` names the caller in the message, e.g. "swl::Connection::tcp".
inline const Address& checkedAddress(std::string_view who, const Address& address) {
  if (!address.unix_path.empty()) return address;
  if (address.host.empty()) throw InvalidArgument(std::string(who) + ": the host is empty");
  if (address.port <= 0 || address.port > 65535) {
    throw InvalidArgument(std::string(who) + ": port " + std::to_string(address.port) + " is not in 1..65535");
  }
  return address;
}

}  // namespace detail
}  // namespace swl
