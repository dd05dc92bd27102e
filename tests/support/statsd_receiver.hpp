#pragma once
// A statsd server for one test: a UDP socket the test owns, bound to a port of 127.0.0.1 the kernel chose
// (so no other process can hold it), whose datagrams are kept as the lines they carry; and what the tests
// read back from statsd's lines ("name:value|type").

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace swl::test {

// One statsd line: "ratelimit.service.config_load_success:1|c" is {name, 1, "c"}.
struct StatsdLine {
  std::string name;
  std::uint64_t value = 0;
  std::string type;
};

// The line's parts as a statsd server reads them (the name up to the first ':'); none for a line that
// is not "name:value|type".
inline std::optional<StatsdLine> parseStatsdLine(std::string_view line) {
  const auto colon = line.find(':');
  const auto bar = line.find('|', colon == std::string_view::npos ? 0 : colon);
  if (colon == std::string_view::npos || colon == 0 || bar == std::string_view::npos || bar == colon + 1 ||
      bar + 1 == line.size()) {
    return std::nullopt;
  }
  StatsdLine parsed{std::string(line.substr(0, colon)), 0, std::string(line.substr(bar + 1))};
  for (const char c : line.substr(colon + 1, bar - colon - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    parsed.value = parsed.value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return parsed;
}

class StatsdReceiver {
 public:
  StatsdReceiver() : socket_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    if (socket_ < 0) throw std::runtime_error("cannot open a UDP socket");
    const int buffer = 8 << 20;  // a burst of a flush must not overflow the kernel's queue before it is read
    ::setsockopt(socket_, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(socket_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(socket_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ::close(socket_);
      throw std::runtime_error("cannot bind a UDP socket on 127.0.0.1");
    }
    port_ = ntohs(address.sin_port);
  }
  ~StatsdReceiver() { ::close(socket_); }
  StatsdReceiver(const StatsdReceiver&) = delete;
  StatsdReceiver& operator=(const StatsdReceiver&) = delete;

  int port() const { return port_; }

  // Every line received so far, in order, after taking what waits on the socket.
  const std::vector<std::string>& lines() {
    char datagram[65536];
    for (ssize_t got; (got = ::recv(socket_, datagram, sizeof datagram, MSG_DONTWAIT)) > 0;) {
      ++datagrams_;
      longest_ = std::max<std::size_t>(longest_, static_cast<std::size_t>(got));
      const std::string_view text(datagram, static_cast<std::size_t>(got));
      std::size_t start = 0;
      for (auto end = text.find('\n'); start < text.size(); end = text.find('\n', start)) {
        if (end == std::string_view::npos) end = text.size();  // a last line without its newline
        lines_.emplace_back(text.substr(start, end - start));
        start = end + 1;
      }
    }
    return lines_;
  }

  // The sum of the values of every counter line named `name`.
  std::uint64_t counted(const std::string& name) {
    std::uint64_t sum = 0;
    for (const std::string& line : lines()) {
      const auto parsed = parseStatsdLine(line);
      if (parsed && parsed->name == name && parsed->type == "c") sum += parsed->value;
    }
    return sum;
  }

  // How many timer lines are named `name`: one per observation.
  std::size_t observed(const std::string& name) {
    std::size_t times = 0;
    for (const std::string& line : lines()) {
      const auto parsed = parseStatsdLine(line);
      if (parsed && parsed->name == name && parsed->type == "ms") ++times;
    }
    return times;
  }

  std::size_t datagrams() const { return datagrams_; }
  std::size_t longestDatagram() const { return longest_; }

 private:
  int socket_;
  int port_ = 0;
  std::vector<std::string> lines_;
  std::size_t datagrams_ = 0;
  std::size_t longest_ = 0;
};

}  // namespace swl::test
