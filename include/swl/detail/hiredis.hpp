#pragma once
// Ownership of hiredis objects. Every redisContext and redisReply swl touches lives in one of these
// pointers, so no path (exceptions included) leaks or double-frees one.

#include <hiredis/hiredis.h>

#include <memory>
#include <string_view>

namespace swl::detail {

struct ContextDeleter {
  void operator()(redisContext* context) const noexcept { redisFree(context); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

inline std::string_view replyText(const redisReply& reply) noexcept {
  return reply.str == nullptr ? std::string_view{} : std::string_view(reply.str, reply.len);
}

inline bool isErrorReply(const redisReply& reply, std::string_view code) noexcept {
  if (reply.type != REDIS_REPLY_ERROR) return false;
  std::string_view text = replyText(reply);
  return text.substr(0, code.size()) == code && (text.size() == code.size() || text[code.size()] == ' ');
}

}  // namespace swl::detail
