// Addresses read and written once for every flag and variable, and for the log.

#include <ratelimit/settings/address.hpp>
#include <ratelimit/settings/values.hpp>

#include <string>
#include <string_view>

namespace swl::ratelimit {

using settings::numberBetween;
using settings::wrong;

Address addressOf(std::string_view text, const std::string& given_as, AddressOf kind) {
  if (text.substr(0, 5) == "unix:") {
    if (kind != AddressOf::redis_server) {
      throw wrong(given_as, text, "expected HOST:PORT; a unix socket serves one server only");
    }
    if (text.size() == 5) throw wrong(given_as, text, "no path after unix:");
    return Address::unixSocket(std::string(text.substr(5)));
  }
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) throw wrong(given_as, text, "expected HOST:PORT");
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto port = numberBetween(text.substr(colon + 1), kind == AddressOf::listener ? 0 : 1, 65535);
  if (!port) {
    throw wrong(given_as, text,
                kind == AddressOf::listener ? "expected a port from 0 to 65535" : "expected a port from 1 to 65535");
  }
  return Address{std::string(host), static_cast<int>(*port)};
}

std::string joinHostPort(std::string host, std::int64_t port) {
  if (host.empty()) host = std::string(kEveryInterface);  // Go's ":8080"
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return host + ":" + std::to_string(port);
}

std::string listeningOn(const std::string& address, int port) {
  if (address.rfind("unix:", 0) == 0) return address;
  return joinHostPort(addressOf(address, "the address", AddressOf::listener).host, port);
}

}  // namespace swl::ratelimit
