#pragma once
// Script: a Lua script run with EVALSHA. Its SHA-1 is known from its text, so every call goes straight
// to EVALSHA; only a NOSCRIPT answer (a fresh, flushed, restarted or failed-over server) sends SCRIPT
// LOAD and repeats the call, once. Nothing else is ever repeated: a call that timed out or lost its
// connection may have run already, and running it twice would count a request twice. EVAL is never used.

#include <swl/connection.hpp>
#include <swl/detail/hiredis.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/sha1.hpp>
#include <swl/error.hpp>

#include <array>
#include <initializer_list>
#include <string>
#include <string_view>

namespace swl {

class Script {
 public:
  Script(std::string_view name, std::string_view text) : name_(name), text_(text), sha_(detail::sha1Hex(text)) {}

  std::string_view name() const noexcept { return name_; }
  std::string_view text() const noexcept { return text_; }
  std::string_view sha() const noexcept { return sha_; }

  // Runs the script and returns its reply. An error reply from the script throws ReplyError.
  detail::ReplyPtr run(Connection& connection, std::initializer_list<std::string_view> keys,
                       std::initializer_list<std::string_view> args) const {
    constexpr std::size_t kMaxArguments = 32;
    if (3 + keys.size() + args.size() > kMaxArguments) {
      throw InvalidArgument("swl::Script " + name_ + ": too many keys and arguments");
    }
    std::array<std::string_view, kMaxArguments> argv;
    const detail::IntegerText key_count(static_cast<std::int64_t>(keys.size()));
    std::size_t argc = 0;
    argv[argc++] = "EVALSHA";
    argv[argc++] = sha_;
    argv[argc++] = key_count;
    for (std::string_view key : keys) argv[argc++] = key;
    for (std::string_view arg : args) argv[argc++] = arg;

    detail::ReplyPtr reply = connection.command(argv.data(), argc);
    if (detail::isErrorReply(*reply, "NOSCRIPT")) {
      load(connection);
      reply = connection.command(argv.data(), argc);
    }
    if (reply->type == REDIS_REPLY_ERROR) {
      throw ReplyError("redis at " + connection.endpoint() + ": script " + name_ +
                       " failed: " + std::string(detail::replyText(*reply)));
    }
    return reply;
  }

  void load(Connection& connection) const {
    detail::ReplyPtr reply = connection.command({"SCRIPT", "LOAD", text_});
    if (reply->type == REDIS_REPLY_ERROR) {
      throw ReplyError("redis at " + connection.endpoint() + ": SCRIPT LOAD of " + name_ +
                       " failed: " + std::string(detail::replyText(*reply)));
    }
    if (reply->type != REDIS_REPLY_STRING || detail::replyText(*reply) != sha_) {
      throw ProtocolError("redis at " + connection.endpoint() + ": SCRIPT LOAD of " + name_ +
                          " did not return the expected SHA-1 " + sha_);
    }
  }

 private:
  std::string name_;
  std::string_view text_;
  std::string sha_;
};

}  // namespace swl
