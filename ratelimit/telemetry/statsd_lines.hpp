#pragma once
/// \file
/// statsd's lines as lyft/gostats writes them (envoyproxy/ratelimit's stats library), without I/O: a
/// stat's name as envoyproxy/ratelimit sanitizes it, the tags gostats appends to every name, one line per
/// counter increase or timer observation, and lines packed into datagrams. The sink (statsd.hpp) only
/// sends what these make.
///
///   ratelimit.service.rate_limit.shop.user.total_hits.__env=prod:3|c
///   ratelimit_server.ShouldRateLimit.response_time.__env=prod:1|ms

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// The tags every name carries (envoyproxy/ratelimit's EXTRA_TAGS), each key once, as given.
using StatsdTags = std::vector<std::pair<std::string, std::string>>;

namespace statsd_detail {

inline bool isDigit(char c) { return c >= '0' && c <= '9'; }

// The length of the text at `at` that envoyproxy's \d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3} matches there, as
// Go's regexp matches it (leftmost first, greedy); 0 for none. The first three runs of digits must each
// be 1 to 3 long and end at a dot, since a shorter run leaves a digit where the dot must be; the last
// takes up to 3 digits, whatever follows them.
inline std::size_t ipv4At(std::string_view text, std::size_t at) {
  std::size_t position = at;
  for (int part = 0; part < 4; ++part) {
    std::size_t digits = 0;
    while (position + digits < text.size() && digits < 4 && isDigit(text[position + digits])) ++digits;
    if (digits == 0) return 0;
    if (part == 3) return position + std::min<std::size_t>(digits, 3) - at;
    if (digits > 3 || position + digits == text.size() || text[position + digits] != '.') return 0;
    position += digits + 1;
  }
  return 0;
}

}  // namespace statsd_detail

/// A name as envoyproxy/ratelimit's utils.SanitizeStatName makes it: ':' and '|', which end a statsd
/// name, become '_', and so do the dots of anything shaped like an IPv4 address, which would split the
/// name into more fields. A control character becomes '_' too (envoyproxy leaves it): a newline in a
/// domain a client sent would otherwise start a line of its own choosing.
inline std::string sanitizeStatName(std::string_view name) {
  std::string clean(name);
  for (char& c : clean) {
    if (c == ':' || c == '|' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
  }
  for (std::size_t at = 0; at < clean.size();) {
    const std::size_t length = statsd_detail::ipv4At(clean, at);
    if (length == 0) {
      ++at;
      continue;
    }
    std::replace(clean.begin() + static_cast<std::ptrdiff_t>(at),
                 clean.begin() + static_cast<std::ptrdiff_t>(at + length), '.', '_');
    at += length;
  }
  return clean;
}

/// What gostats appends to every name for its tags: ".__key=value" per tag, sorted by key (bytewise, as
/// Go compares strings), a value's '.', ':' and '|' as '_' (gostats's ReplaceChars: a value must not
/// split the name, nor end it); a tag with an empty key or value is left out, as gostats leaves it.
inline std::string tagSuffix(StatsdTags tags) {
  tags.erase(
      std::remove_if(tags.begin(), tags.end(), [](const auto& tag) { return tag.first.empty() || tag.second.empty(); }),
      tags.end());
  std::sort(tags.begin(), tags.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string suffix;
  for (auto& [key, value] : tags) {
    std::replace_if(
        value.begin(), value.end(), [](char c) { return c == '.' || c == ':' || c == '|'; }, '_');
    suffix.append(".__").append(key).append("=").append(value);
  }
  return suffix;
}

/// A counter's line: what it gained since the last flush, "name:3|c".
inline std::string counterLine(std::string_view name, std::uint64_t increase) {
  return std::string(name).append(":").append(std::to_string(increase)).append("|c\n");
}

/// A timer's line: one observation in whole milliseconds, "name:12|ms" (gostats writes a whole number
/// as one, and envoyproxy/ratelimit observes whole milliseconds).
inline std::string timerLine(std::string_view name, std::uint64_t milliseconds) {
  return std::string(name).append(":").append(std::to_string(milliseconds)).append("|ms\n");
}

/// gostats's datagram over UDP: 1432 bytes fit a 1500-byte MTU with IPv6's and UDP's headers, so that no
/// datagram is fragmented (and lost whole for one lost fragment).
inline constexpr std::size_t kMostDatagramBytes = 1432;

/// Lines packed into datagrams of whole lines, each at most `most_bytes` long (a line longer than that
/// goes alone), handed to `send` as each fills.
class DatagramPacker {
 public:
  using Send = std::function<void(std::string_view datagram)>;

  explicit DatagramPacker(Send send, std::size_t most_bytes = kMostDatagramBytes)
      : send_(std::move(send)), most_bytes_(most_bytes) {}

  /// Adds one line, its newline included.
  void add(std::string_view line) {
    if (!pending_.empty() && pending_.size() + line.size() > most_bytes_) sendPending();
    pending_.append(line);
    if (pending_.size() >= most_bytes_) sendPending();
  }

  /// Sends what is left: the last datagram, not full.
  void finish() {
    if (!pending_.empty()) sendPending();
  }

 private:
  void sendPending() {
    send_(pending_);
    pending_.clear();
  }

  Send send_;
  std::size_t most_bytes_;
  std::string pending_;
};

}  // namespace swl::ratelimit
