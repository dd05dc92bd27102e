#pragma once
// How swl's messages show what they name: a caller's bytes quoted, a Redis server by its address.

#include <cstddef>
#include <string>
#include <string_view>

namespace swl::detail {

// A caller's key (or any bytes it chose) as a message shows it: quoted, bytes outside printable ASCII
// escaped as \xHH, and cut after 64 bytes with the full length said, so a megabyte of binary key
// never becomes a megabyte of unreadable what().
inline std::string quoted(std::string_view text) {
  static constexpr std::size_t kShown = 64;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string shown = "'";
  for (const char c : text.substr(0, kShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e || c == '\\' || c == '\'') {
      shown.append("\\x").append(1, kHex[byte >> 4]).append(1, kHex[byte & 15]);
    } else {
      shown += c;
    }
  }
  shown += '\'';
  if (text.size() > kShown) shown.append("... (").append(std::to_string(text.size())).append(" bytes)");
  return shown;
}

// "redis at <endpoint>" and then the parts of `what` (" failed ...", ": ..."): how every message about a
// server begins, so that a log line names the server whichever client wrote it.
template <class... Parts>
std::string aboutRedis(std::string_view endpoint, const Parts&... what) {
  std::string message = "redis at ";
  message.append(endpoint);
  (message.append(std::string_view(what)), ...);
  return message;
}

// The error of type E (ours) about the server at `endpoint`, its message as aboutRedis writes it.
template <class E, class... Parts>
E redisError(std::string_view endpoint, const Parts&... what) {
  return E(aboutRedis(endpoint, what...));
}

}  // namespace swl::detail
