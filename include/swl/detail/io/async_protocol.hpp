#pragma once
// What an event-loop connection (AsyncConnection on libevent, AsioConnection on Asio) sends around its
// calls, without I/O: a call formatted once, and when a call that met NOSCRIPT needs a SCRIPT LOAD sent
// before it goes out again. (The handshake is every connection's: detail/io/handshake.hpp.)

#include <swl/connection_options.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/io/native_module.hpp>
#include <swl/detail/io/outgoing.hpp>
#include <swl/detail/messages.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::detail {

// A script call as an async context takes it: formatted once, where the call is made (on the caller's
// thread, so the loop's thread does less), and kept to resend after NOSCRIPT. `deadline_at` is where the
// digits of its deadline's room are in `command` (after the '-'), written as it is sent; 0 for none.
// `native_head` is how many of its first words the module's command replaces (nativeHead; 0 for a call
// without that form), and `native_rest_at` where the words it keeps begin, for a connection that sends it
// so (formatNative).
struct FormattedCall {
  std::string command;
  const Script* script = nullptr;
  std::size_t deadline_at = 0;
  std::size_t native_head = 0;
  std::size_t native_rest_at = 0;
};

inline FormattedCall formatted(const ScriptCall& call) {
  const Words words = wordsOf(call);
  FormattedCall made{formattedCommand(words), &call.script(), 0, nativeHead(call), 0};
  if (words.deadline_word != 0) made.deadline_at = formattedOffset(words, words.deadline_word) + 1;
  if (made.native_head != 0) {
    const std::size_t last_replaced = made.native_head - 1;
    made.native_rest_at = formattedOffset(words, last_replaced) + words.lengths[last_replaced] + 2;
  }
  return made;
}

// When each script was last loaded on one connection, in the connection's send order. Replies come in
// send order, so one SCRIPT LOAD sent after a call that met NOSCRIPT serves every call sent before it
// that met the same empty cache; each goes out again right behind it.
class ScriptLoads {
 public:
  // Whether the call sent as `order`, which met NOSCRIPT, needs a SCRIPT LOAD of `script` first.
  bool needLoadFor(const Script& script, std::uint64_t order) { return loadedAt(script) < order; }
  // A SCRIPT LOAD of `script` went out as `order`.
  void loaded(const Script& script, std::uint64_t order) { loadedAt(script) = order; }

 private:
  std::uint64_t& loadedAt(const Script& script) {
    for (auto& [known, loaded_at] : loaded_at_) {
      if (known == &script) return loaded_at;
    }
    return loaded_at_.emplace_back(&script, 0).second;
  }

  std::vector<std::pair<const Script*, std::uint64_t>> loaded_at_;  // a connection meets few scripts
};

}  // namespace swl::detail
