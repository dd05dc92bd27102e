#pragma once
// What Redis nodes say about where the data lives, read without I/O so each answer can be tested on its
// own: a cluster's redirections ("MOVED 3999 10.0.0.2:6381", "ASK ..."), its "wait and retry" answers
// (TRYAGAIN, CLUSTERDOWN) and its slot map (CLUSTER SLOTS), a sentinel's master address, and the pacing
// of a call that is asked to come back. Nothing is trusted: an answer of the wrong shape is a
// ProtocolError naming the node.

#include <swl/connection_options.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/hash_slot.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swl::detail {

inline std::optional<int> parsePort(std::string_view text) {
  int port = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (error != std::errc() || end != text.data() + text.size() || port <= 0 || port > 65535) return std::nullopt;
  return port;
}

// A node that does not know its own address says ":6381" or "?": it is then the node that answered.
inline std::string hostOr(std::string_view host, const std::string& answering_host) {
  return host.empty() || host == "?" ? answering_host : std::string(host);
}

struct Redirection {
  enum class Kind { moved, ask } kind;
  std::uint16_t slot;
  Address target;
};

// "MOVED <slot> <host>:<port>" or "ASK ..."; nullopt for any other reply.
inline std::optional<Redirection> parseRedirection(ReplyView reply, const Address& answering) {
  Redirection redirection{};
  if (reply.isError("MOVED")) {
    redirection.kind = Redirection::Kind::moved;
  } else if (reply.isError("ASK")) {
    redirection.kind = Redirection::Kind::ask;
  } else {
    return std::nullopt;
  }
  const std::string_view text = reply.text();
  const std::size_t slot_at = text.find(' ') + 1;
  const std::size_t target_at = text.find(' ', slot_at);
  const std::size_t port_at = text.rfind(':');
  int slot = -1;
  std::optional<int> port;
  if (target_at != std::string_view::npos && port_at != std::string_view::npos && port_at > target_at) {
    const auto [end, error] = std::from_chars(text.data() + slot_at, text.data() + target_at, slot);
    if (error != std::errc() || end != text.data() + target_at) slot = -1;
    port = parsePort(text.substr(port_at + 1));
  }
  if (slot < 0 || slot >= static_cast<int>(kClusterSlots) || !port) {
    throw redisError<ProtocolError>(answering.endpoint(), " sent a redirection swl cannot read: ", text);
  }
  redirection.slot = static_cast<std::uint16_t>(slot);
  redirection.target = {hostOr(text.substr(target_at + 1, port_at - target_at - 1), answering.host), *port, {}};
  return redirection;
}

// The cluster is busy (keys of a slot half moved, or no quorum yet): the same call may succeed soon.
inline bool isRetryLater(ReplyView reply) noexcept { return reply.isError("TRYAGAIN") || reply.isError("CLUSTERDOWN"); }

struct SlotRange {
  std::uint16_t first;
  std::uint16_t last;
  Address master;
};

// CLUSTER SLOTS: [[first, last, [host, port, id, ...], replica...], ...]. Slots no master serves are absent.
inline std::vector<SlotRange> parseClusterSlots(ReplyView reply, const Address& answering) {
  auto malformed = [&](std::string_view why) {
    return redisError<ProtocolError>(answering.endpoint(), " answered CLUSTER SLOTS with ", why);
  };
  if (reply.isError()) {
    throw redisError<ReplyError>(answering.endpoint(), " refused CLUSTER SLOTS: ", reply.text());
  }
  if (!reply.isArray()) throw malformed("something other than an array");
  std::vector<SlotRange> ranges;
  ranges.reserve(reply.size());
  for (std::size_t i = 0; i < reply.size(); ++i) {
    const ReplyView range = reply[i];
    const ReplyView master = range[2];
    if (range.size() < 3 || !range[0].isInteger() || !range[1].isInteger() || master.size() < 2) {
      throw malformed("a range that is not [first, last, [host, port, ...], ...]");
    }
    const long long first = range[0].integer();
    const long long last = range[1].integer();
    if (first < 0 || last < first || last >= static_cast<long long>(kClusterSlots)) {
      throw malformed("the slot range " + std::to_string(first) + ".." + std::to_string(last));
    }
    const ReplyView host = master[0];
    const ReplyView port = master[1];
    if (!host.isString() || !port.isInteger() || port.integer() <= 0 || port.integer() > 65535) {
      throw malformed("a master that is not [host, port, ...]");
    }
    ranges.push_back({static_cast<std::uint16_t>(first),
                      static_cast<std::uint16_t>(last),
                      {hostOr(host.text(), answering.host), static_cast<int>(port.integer()), {}}});
  }
  return ranges;
}

// The answer to SENTINEL get-master-addr-by-name: the master's [host, port], or nothing when this
// sentinel does not know `master_name`. Throws AuthError (the sentinel wants a password), ReplyError (it
// refused the command) or ProtocolError (an answer of another shape), each naming the sentinel.
inline std::optional<Address> parseMasterAddress(ReplyView reply, const std::string& sentinel,
                                                 const std::string& master_name) {
  if (reply.isNil()) return std::nullopt;
  if (reply.isError("NOAUTH")) {
    throw AuthError("sentinel " + sentinel + " requires authentication: " + std::string(reply.text()));
  }
  if (reply.isError()) {
    throw ReplyError("sentinel " + sentinel + " refused SENTINEL get-master-addr-by-name " + master_name + ": " +
                     std::string(reply.text()));
  }
  const auto malformed = [&](std::string_view why) {
    return ProtocolError("sentinel " + sentinel + " answered SENTINEL get-master-addr-by-name " + master_name +
                         " with " + std::string(why) + ", not [host, port]");
  };
  if (!reply.isArray() || reply.size() != 2) throw malformed("a reply of another shape");
  const ReplyView host = reply[0];
  const ReplyView port = reply[1];
  if (!host.isString() || !port.isString() || host.text().empty()) throw malformed("an array of other elements");
  const std::optional<int> port_number = parsePort(port.text());
  if (!port_number) throw malformed("the port '" + std::string(port.text()) + "'");
  return Address{std::string(host.text()), *port_number};
}

// What a sentinel announces about a failover of one master, on its pub/sub channels:
//   +selected-slave    "slave <ip>:<port> <ip> <port> @ <master> <master-ip> <master-port>": the leader chose
//                      this replica and is about to promote it; the old master must not be written to
//   +promoted-slave    the same shape: the replica is a master now
//   +switch-master     "<master> <old-ip> <old-port> <new-ip> <new-port>": every sentinel's new configuration
//   -failover-abort-*  "master <master> <ip> <port>": the failover stopped; the old master stays
struct FailoverNews {
  enum class Kind { selected, promoted, switched, aborted } kind;
  Address master;  // where writes go now (the old master for an aborted failover)
};

// The news in one message of `channel`, if it is about `master_name`; anything else is no news. A
// message of the wrong shape is a ProtocolError naming the sentinel.
inline std::optional<FailoverNews> parseFailoverNews(std::string_view channel, std::string_view payload,
                                                     const std::string& master_name, const std::string& sentinel) {
  std::vector<std::string_view> words;
  for (std::size_t at = 0; at < payload.size();) {
    const std::size_t end = std::min(payload.find(' ', at), payload.size());
    if (end > at) words.push_back(payload.substr(at, end - at));
    at = end + 1;
  }
  const auto malformed = [&] {
    return ProtocolError("sentinel " + sentinel + " announced " + std::string(channel) + " as '" +
                         std::string(payload) + "', which swl cannot read");
  };
  const auto address = [&](std::string_view host, std::string_view port) {
    const std::optional<int> number = parsePort(port);
    if (host.empty() || !number) throw malformed();
    return Address{std::string(host), *number};
  };
  FailoverNews news{};
  if (channel == "+selected-slave" || channel == "+promoted-slave") {
    if (words.size() != 8 || words[0] != "slave" || words[4] != "@") throw malformed();
    if (words[5] != master_name) return std::nullopt;
    news.kind = channel == "+selected-slave" ? FailoverNews::Kind::selected : FailoverNews::Kind::promoted;
    news.master = address(words[2], words[3]);
  } else if (channel == "+switch-master") {
    if (words.size() != 5) throw malformed();
    if (words[0] != master_name) return std::nullopt;
    news.kind = FailoverNews::Kind::switched;
    news.master = address(words[3], words[4]);
  } else if (channel.substr(0, 16) == "-failover-abort-") {
    if (words.size() < 4 || words[0] != "master") throw malformed();
    if (words[1] != master_name) return std::nullopt;
    news.kind = FailoverNews::Kind::aborted;
    news.master = address(words[2], words[3]);
  } else {
    return std::nullopt;
  }
  return news;
}

// The pauses of a call asked to come back (TRYAGAIN, CLUSTERDOWN, a redirection bounced back and forth):
// 2 ms, doubling up to 100 ms, for as long as they end before `give_up_at`.
class RetryPacing {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RetryPacing(Clock::time_point give_up_at) : give_up_at_(give_up_at) {}

  // The next pause, or nothing when it would end after the call's time is up.
  std::optional<std::chrono::milliseconds> next(Clock::time_point now) {
    if (now + pause_ > give_up_at_) return std::nullopt;
    const std::chrono::milliseconds pause = pause_;
    pause_ = std::min(pause_ * 2, std::chrono::milliseconds(100));
    return pause;
  }

 private:
  Clock::time_point give_up_at_;
  std::chrono::milliseconds pause_{2};
};

}  // namespace swl::detail
