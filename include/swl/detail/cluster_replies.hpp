#pragma once
// Reading what Redis Cluster nodes answer: a redirection ("MOVED 3999 10.0.0.2:6381", "ASK ..."), a
// "wait and retry" (TRYAGAIN, CLUSTERDOWN), and the slot map of CLUSTER SLOTS. Nothing is trusted:
// an answer of the wrong shape is a ProtocolError naming the node.

#include <swl/detail/hiredis.hpp>
#include <swl/error.hpp>
#include <swl/hash_slot.hpp>

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swl::detail {

struct NodeAddress {
  std::string host;
  int port = 0;

  std::string endpoint() const { return host + ':' + std::to_string(port); }
};

struct Redirection {
  enum class Kind { moved, ask } kind;
  std::uint16_t slot;
  NodeAddress target;
};

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

// "MOVED <slot> <host>:<port>" or "ASK ..."; nullopt for any other reply.
inline std::optional<Redirection> parseRedirection(const redisReply& reply, const NodeAddress& answering) {
  Redirection redirection{};
  if (isErrorReply(reply, "MOVED")) {
    redirection.kind = Redirection::Kind::moved;
  } else if (isErrorReply(reply, "ASK")) {
    redirection.kind = Redirection::Kind::ask;
  } else {
    return std::nullopt;
  }
  const std::string_view text = replyText(reply);
  const std::size_t slot_at = text.find(' ') + 1;
  const std::size_t target_at = text.find(' ', slot_at);
  const std::size_t port_at = text.rfind(':');
  int slot = -1;
  std::optional<int> port;
  if (target_at != std::string_view::npos && port_at != std::string_view::npos && port_at > target_at) {
    std::from_chars(text.data() + slot_at, text.data() + target_at, slot);
    port = parsePort(text.substr(port_at + 1));
  }
  if (slot < 0 || slot >= static_cast<int>(kClusterSlots) || !port) {
    throw ProtocolError("redis at " + answering.endpoint() +
                        " sent a redirection swl cannot read: " + std::string(text));
  }
  redirection.slot = static_cast<std::uint16_t>(slot);
  redirection.target = {hostOr(text.substr(target_at + 1, port_at - target_at - 1), answering.host), *port};
  return redirection;
}

// The cluster is busy (keys of a slot half moved, or no quorum yet): the same call may succeed soon.
inline bool isRetryLater(const redisReply& reply) noexcept {
  return isErrorReply(reply, "TRYAGAIN") || isErrorReply(reply, "CLUSTERDOWN");
}

struct SlotRange {
  std::uint16_t first;
  std::uint16_t last;
  NodeAddress master;
};

// CLUSTER SLOTS: [[first, last, [host, port, id, ...], replica...], ...]. Slots no master serves are absent.
inline std::vector<SlotRange> parseClusterSlots(const redisReply& reply, const NodeAddress& answering) {
  auto malformed = [&](std::string_view why) {
    return ProtocolError("redis at " + answering.endpoint() + " answered CLUSTER SLOTS with " + std::string(why));
  };
  if (reply.type == REDIS_REPLY_ERROR) {
    throw ReplyError("redis at " + answering.endpoint() + " refused CLUSTER SLOTS: " + std::string(replyText(reply)));
  }
  if (reply.type != REDIS_REPLY_ARRAY) throw malformed("something other than an array");
  std::vector<SlotRange> ranges;
  ranges.reserve(reply.elements);
  for (std::size_t i = 0; i < reply.elements; ++i) {
    const redisReply& range = *reply.element[i];
    if (range.type != REDIS_REPLY_ARRAY || range.elements < 3 || range.element[0]->type != REDIS_REPLY_INTEGER ||
        range.element[1]->type != REDIS_REPLY_INTEGER || range.element[2]->type != REDIS_REPLY_ARRAY ||
        range.element[2]->elements < 2) {
      throw malformed("a range that is not [first, last, [host, port, ...], ...]");
    }
    const long long first = range.element[0]->integer;
    const long long last = range.element[1]->integer;
    const redisReply& master = *range.element[2];
    const redisReply& host = *master.element[0];
    const redisReply& port = *master.element[1];
    if (first < 0 || last < first || last >= static_cast<long long>(kClusterSlots)) {
      throw malformed("the slot range " + std::to_string(first) + ".." + std::to_string(last));
    }
    if (host.type != REDIS_REPLY_STRING || port.type != REDIS_REPLY_INTEGER || port.integer <= 0 ||
        port.integer > 65535) {
      throw malformed("a master that is not [host, port, ...]");
    }
    ranges.push_back({static_cast<std::uint16_t>(first),
                      static_cast<std::uint16_t>(last),
                      {hostOr(replyText(host), answering.host), static_cast<int>(port.integer)}});
  }
  return ranges;
}

}  // namespace swl::detail
