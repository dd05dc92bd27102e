#pragma once
// Small readers for the replies tests look at directly.

#include <swl/detail/io/hiredis.hpp>
#include <swl/redis/connection.hpp>

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace swl::test {

inline long long integerReply(swl::Connection& connection, std::initializer_list<std::string_view> argv) {
  swl::Reply reply = connection.command(argv);
  if (!reply->isInteger()) {
    throw std::runtime_error("expected an integer reply, got: " + std::string(reply->text()));
  }
  return reply->integer();
}

// The entries of a sliding window log (one per recorded request): its members scored by a time, not its
// bookkeeping (below 0 and from 2^53 on).
inline long long logEntries(swl::Connection& connection, const std::string& redis_key) {
  return integerReply(connection, {"ZCOUNT", redis_key, "(0", "(9007199254740992"});
}

inline std::string textReply(swl::Connection& connection, std::initializer_list<std::string_view> argv) {
  swl::Reply reply = connection.command(argv);
  if (reply->isError()) {
    throw std::runtime_error("error reply: " + std::string(reply->text()));
  }
  return std::string(reply->text());
}

// A counter from an INFO section: `marker` followed by digits (0 when the line is absent).
inline long long infoCounter(swl::Connection& connection, std::string_view section, const std::string& marker) {
  const std::string info = textReply(connection, {"INFO", section});
  const std::size_t at = info.find(marker);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + marker.size()));
}

// "calls=12" of one command in INFO commandstats, 0 when the command never ran.
inline long long commandCalls(swl::Connection& connection, std::string_view command) {
  return infoCounter(connection, "commandstats", "cmdstat_" + std::string(command) + ":calls=");
}

// Redis's CPU per call of `command` (lower case, as INFO names it) in microseconds ("usec_per_call=" in
// INFO commandstats), 0 before any ran.
inline double usecPerCall(swl::Connection& connection, std::string_view command) {
  const std::string stats = textReply(connection, {"INFO", "commandstats"});
  const std::size_t at = stats.find("cmdstat_" + std::string(command) + ":");
  if (at == std::string::npos) return 0;
  const std::string field = "usec_per_call=";
  return std::stod(stats.substr(stats.find(field, at) + field.size()));
}

// Redis's CPU per EVALSHA in microseconds, 0 before any ran.
inline double evalshaUsecPerCall(swl::Connection& connection) { return usecPerCall(connection, "evalsha"); }

// "count=3" of one error code in INFO errorstats (Redis 7): how often the server answered with it.
inline long long errorReplies(swl::Connection& connection, std::string_view code) {
  return infoCounter(connection, "errorstats", "errorstat_" + std::string(code) + ":count=");
}

}  // namespace swl::test
