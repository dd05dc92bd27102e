#pragma once
// RedisClient: what a limiter needs from Redis, whatever stands behind it. A limiter holds a
// RedisClient&, so the same limiter type runs over one Connection, a ConnectionPool shared by threads,
// or (later) a cluster: the user swaps the client, not the code.
//
// Every implementation keeps the same promises:
// - a call goes out as EVALSHA; only a NOSCRIPT answer loads the script (SCRIPT LOAD) and repeats that
//   call, once. A call that timed out or lost its connection may have run already, so it is never
//   repeated: it fails with ConnectionError (TimeoutError) and the next call reconnects;
// - an error reply (WRONGTYPE, OOM, a script error) is a ReplyError naming the script and the server.

#include <swl/detail/hiredis.hpp>
#include <swl/error.hpp>
#include <swl/script.hpp>

#include <exception>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace swl {

// One call's answer in a batch: its reply, or why there is none (the other calls are unaffected).
struct ScriptReply {
  detail::ReplyPtr reply;
  std::exception_ptr error;
};

class RedisClient {
 public:
  virtual ~RedisClient() = default;

  // Runs one call and returns its (non-error) reply. Throws ConnectionError or ReplyError.
  virtual detail::ReplyPtr run(const ScriptCall& call) = 0;

  // Runs many calls pipelined, in as few round trips as the client can, and answers each in input
  // order. Calls that were answered keep their replies even when later ones fail.
  virtual std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) = 0;

  detail::ReplyPtr run(const Script& script, std::initializer_list<std::string_view> keys,
                       std::initializer_list<std::string_view> args) {
    return run(ScriptCall(script, keys, args));
  }

 protected:
  RedisClient() = default;
  RedisClient(const RedisClient&) = default;
  RedisClient& operator=(const RedisClient&) = default;
  RedisClient(RedisClient&&) = default;
  RedisClient& operator=(RedisClient&&) = default;
};

namespace detail {

// How every client reports an error reply to a script call.
inline ReplyError scriptError(std::string_view endpoint, const Script& script, const redisReply& reply) {
  return ReplyError("redis at " + std::string(endpoint) + ": script " + script.name() +
                    " failed: " + std::string(replyText(reply)));
}

}  // namespace detail
}  // namespace swl
