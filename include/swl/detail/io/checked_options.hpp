#pragma once
// The checks every client runs on what it is given to connect with, before it dials: options that make
// sense together, an address that can be dialled. They throw InvalidArgument naming the problem.

#include <swl/connection_options.hpp>
#include <swl/error.hpp>

#include <string>
#include <string_view>

namespace swl::detail {

inline const ConnectionOptions& checkedOptions(const ConnectionOptions& options) {
  if (options.connect_timeout.count() < 0 || options.command_timeout.count() < 0 ||
      options.breaker_cooldown.count() < 0 || options.idle_check_after.count() < 0) {
    throw InvalidArgument(
        "swl::ConnectionOptions: timeouts, breaker_cooldown and idle_check_after must not be negative");
  }
  if (options.db < 0)
    throw InvalidArgument("swl::ConnectionOptions: db " + std::to_string(options.db) + " is negative");
  if (options.replica_acks < 0) {
    throw InvalidArgument("swl::ConnectionOptions: replica_acks " + std::to_string(options.replica_acks) +
                          " is negative");
  }
  if (!options.user.empty() && options.password.empty()) {
    throw InvalidArgument("swl::ConnectionOptions: user " + detail::quoted(options.user) +
                          " is given without a password");
  }
  if (options.tls.cert_file.empty() != options.tls.key_file.empty()) {
    throw InvalidArgument("swl::TlsOptions: cert_file and key_file go together; " +
                          std::string(options.tls.cert_file.empty() ? "key_file" : "cert_file") + " is given alone");
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

}  // namespace swl::detail
