#pragma once
// A command as a connection sends it: a script call's words as hiredis takes them (wordsOf), as the
// module's command where the server has it (detail/io/native_module.hpp), and its deadline written into
// its room on Redis's clock (Outgoing: detail/script/deadline.hpp says why). No I/O
// here: the blocking link sends the result with redisCommandArgv, a pipeline with redisAppendCommandArgv.

#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/io/native_module.hpp>
#include <swl/detail/io/redis_clock.hpp>
#include <swl/detail/script/deadline.hpp>
#include <swl/redis/client.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>

namespace swl::detail {

// A call's words as the connections send them, with its room for a deadline; as the module's command
// when `native` (the connection's server has it) and the call has a native form (nativeHead).
inline Words wordsOf(const ScriptCall& call, bool native = false) noexcept {
  const std::size_t head = native ? nativeHead(call) : 0;
  return {call.pointers(),
          call.lengths(),
          call.argc(),
          call.deadlineWord(),
          head != 0 ? call.script().nativeCommand() : std::string_view(),
          head};
}

// `command`'s words as hiredis takes them: its deadline written into its room by `clock`, due `timeout`
// from now, as its connection will wait that long for the reply; a script call sent as the module's
// command has that command's name in place of its first words (nativeHead). A command without either, or sent
// with no timeout or before the clock is known, goes out as it is, uncopied. A command with a deadline
// is a ScriptCall's, so its words fit in a ScriptCall's room.
class Outgoing {
 public:
  Outgoing(const Words& command, const RedisClock& clock, std::chrono::milliseconds timeout) : command_(command) {
    const bool deadline = command.deadline_word != 0 && timeout.count() != 0 && clock.known();
    const std::size_t dropped = command.native_command.empty() ? 0 : command.native_head - 1;
    if (!deadline && dropped == 0) return;
    std::copy_n(command.pointers + dropped, command.count - dropped, pointers_.begin());
    std::copy_n(command.lengths + dropped, command.count - dropped, lengths_.begin());
    if (dropped != 0) pointers_[0] = command.native_command.data(), lengths_[0] = command.native_command.size();
    if (deadline) {
      std::copy(kNoDeadline.begin(), kNoDeadline.end(), deadline_.begin());
      clock.writeDeadline(deadline_.data() + 1, RedisClock::Local::now() + timeout);
      pointers_[command.deadline_word - dropped] = deadline_.data();
      lengths_[command.deadline_word - dropped] = deadline_.size();
    }
    command_.pointers = pointers_.data(), command_.lengths = lengths_.data(), command_.count -= dropped;
  }
  Outgoing(const Outgoing&) = delete;  // may point into itself
  Outgoing& operator=(const Outgoing&) = delete;

  int count() const noexcept { return static_cast<int>(command_.count); }
  const char** pointers() const noexcept { return hiredisPointers(command_.pointers); }
  const std::size_t* lengths() const noexcept { return command_.lengths; }

 private:
  Words command_;
  std::array<char, kNoDeadline.size()> deadline_;
  std::array<const char*, ScriptCall::kMaxArguments> pointers_;
  std::array<std::size_t, ScriptCall::kMaxArguments> lengths_;
};

}  // namespace swl::detail
