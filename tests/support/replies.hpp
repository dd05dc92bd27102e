#pragma once
// Small readers for the replies tests look at directly.

#include <swl/connection.hpp>
#include <swl/detail/hiredis.hpp>

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace swl::test {

inline long long integerReply(swl::Connection& connection, std::initializer_list<std::string_view> argv) {
  swl::detail::ReplyPtr reply = connection.command(argv);
  if (reply->type != REDIS_REPLY_INTEGER) {
    throw std::runtime_error("expected an integer reply, got: " + std::string(swl::detail::replyText(*reply)));
  }
  return reply->integer;
}

inline std::string textReply(swl::Connection& connection, std::initializer_list<std::string_view> argv) {
  swl::detail::ReplyPtr reply = connection.command(argv);
  if (reply->type == REDIS_REPLY_ERROR) {
    throw std::runtime_error("error reply: " + std::string(swl::detail::replyText(*reply)));
  }
  return std::string(swl::detail::replyText(*reply));
}

// "calls=12" of one command in INFO commandstats, 0 when the command never ran.
inline long long commandCalls(swl::Connection& connection, std::string_view command) {
  const std::string stats = textReply(connection, {"INFO", "commandstats"});
  const std::string marker = "cmdstat_" + std::string(command) + ":calls=";
  const std::size_t at = stats.find(marker);
  if (at == std::string::npos) return 0;
  return std::stoll(stats.substr(at + marker.size()));
}

}  // namespace swl::test
