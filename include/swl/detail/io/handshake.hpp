#pragma once
// What every connection sends as it connects, and what the replies mean, without I/O: written once for
// the blocking link (detail/io/link.hpp) and the event-loop connections (detail/io/async_calls.hpp), which
// send the commands in one write and hand each reply, error replies included, to read().
//
//   PING, or AUTH when there is a password   a server that wants a password says so to a PING (NOAUTH), or
//                                            refuses the credentials: the connection is of no use
//   SELECT db, when db is not 0              refused: of no use either
//   TIME                                     Redis's clock (detail/io/redis_clock.hpp); an error (a Sentinel
//                                            has no TIME; an ACL without it) leaves the clock unknown
//   COMMAND INFO SWL.DECIDE                  whether the server has the swl-native module of this layout
//                                            (detail/io/native_module.hpp), asked unless the options rule
//                                            it out; an error reads as no module

#include <swl/connection_options.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/io/native_module.hpp>
#include <swl/detail/io/redis_clock.hpp>
#include <swl/detail/messages.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace swl::detail {

class Handshake {
 public:
  // What a command of the handshake is for.
  enum class Purpose { greeting, select, time, module };

  // One command, formatted as it goes out (RESP).
  struct Command {
    Purpose purpose;
    std::string formatted;
  };

  Handshake(const ConnectionOptions& options, std::string_view endpoint)
      : endpoint_(endpoint), authenticates_(!options.password.empty()), user_(options.user), db_(options.db) {
    if (!authenticates_) {
      add(Purpose::greeting, {"PING"});
    } else if (user_.empty()) {
      add(Purpose::greeting, {"AUTH", options.password});
    } else {
      add(Purpose::greeting, {"AUTH", user_, options.password});
    }
    const std::string db = std::to_string(db_);
    if (db_ != 0) add(Purpose::select, {"SELECT", db});
    add(Purpose::time, {"TIME"});
    if (asksForModule(options)) {
      commands_.push_back({Purpose::module, formattedCommand(std::data(kModuleQuestion), std::size(kModuleQuestion))});
    }
  }

  // The commands, in the order they go out and their replies come.
  const std::vector<Command>& commands() const noexcept { return commands_; }

  // The reply to `command` (one of commands()), read `received` on the local clock: Redis's clock goes
  // into `clock`, whether the server has the module into `module_loaded`. Throws AuthError or ReplyError
  // for a refusal that leaves the connection of no use.
  void read(const Command& command, ReplyView reply, RedisClock::Local::time_point received, RedisClock& clock,
            bool& module_loaded) const {
    switch (command.purpose) {
      case Purpose::greeting:
        if (reply.isError("NOAUTH")) {
          throw redisError<AuthError>(endpoint_, " requires a password, and ConnectionOptions::password is empty (",
                                      reply.text(), ")");
        }
        // A PING is only asked whether a password is wanted: another refusal of it (an ACL without PING)
        // is nothing to this connection.
        if (reply.isError() && authenticates_) {
          // Redis's own message names the problem and never repeats the password; neither does ours.
          throw redisError<AuthError>(endpoint_, " refused authentication",
                                      (user_.empty() ? std::string() : " as user " + detail::quoted(user_)), ": ",
                                      reply.text());
        }
        return;
      case Purpose::select:
        if (reply.isError()) {
          throw redisError<ReplyError>(endpoint_, " refused SELECT ", std::to_string(db_), ": ", reply.text());
        }
        return;
      case Purpose::time:
        clock.observe(reply, received);
        return;
      case Purpose::module:
        module_loaded = moduleIn(reply);
        return;
    }
  }

 private:
  void add(Purpose purpose, std::initializer_list<std::string_view> words) {
    commands_.push_back({purpose, formattedCommand(words.begin(), words.size())});
  }

  std::string endpoint_;
  bool authenticates_;
  std::string user_;
  int db_;
  std::vector<Command> commands_;
};

}  // namespace swl::detail
