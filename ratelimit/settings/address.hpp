#pragma once
/// \file
/// The one reader of the addresses swl-ratelimit's flags and variables give (HOST:PORT, [IPV6]:PORT, and
/// for one Redis server unix:PATH), the one writer of HOST:PORT (Go's net.JoinHostPort), and the
/// address a listener logs once the system chose its port.

#include <swl/connection_options.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace swl::ratelimit {

/// The host of every interface, as Go's ":8080" listens on.
inline constexpr std::string_view kEveryInterface = "0.0.0.0";

/// What an address takes besides HOST:PORT and [IPV6]:PORT.
enum class AddressOf {
  redis_server,  ///< also unix:PATH
  redis_node,    ///< one of several: a Sentinel or a Cluster node
  server,        ///< another server HOST:PORT alone: the xDS server
  listener,      ///< also port 0, for the system to choose
};

/// The address `text` gives, its host without brackets. Anything else is a SettingsError naming
/// `given_as` (the flag or variable) and saying what it takes.
Address addressOf(std::string_view text, const std::string& given_as, AddressOf kind);

/// Go's net.JoinHostPort: HOST:PORT, an IPv6 host in brackets; an empty host is every interface
/// (Go's ":8080").
std::string joinHostPort(std::string host, std::int64_t port);

/// A listener's address as the settings hold it, with the port it listens on (the one the system chose,
/// for port 0); a unix socket as it was given.
std::string listeningOn(const std::string& address, int port);

}  // namespace swl::ratelimit
