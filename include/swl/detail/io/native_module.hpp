#pragma once
// The swl-native module as a connection meets it, without I/O: how the handshake asks whether the server
// has it (COMMAND INFO, in the handshake's one write), how a call goes out as the module's command, and
// what an error reply to that command asks for. The module takes a script's key and arguments in the
// script's order (Script::nativeCommand), so its command is the script call's words from the key on (or
// from the key count, Script::NativeKeys), behind the command's name in place of "EVALSHA sha numkeys".

#include <swl/connection_options.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/script/wire.hpp>
#include <swl/redis/client.hpp>

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

namespace swl::detail {

// How many of a script call's first words ("EVALSHA sha numkeys") the module's command replaces with its
// name: all three when it takes one key, the call's word 3 (Script::NativeKeys::one); "EVALSHA sha" when it
// counts its keys as EVALSHA does (counted); none when the call has no such form: its script names no
// command, or names one of one key and the call has several.
inline constexpr std::size_t kScriptHead = 3;
inline std::size_t nativeHead(const ScriptCall& call) noexcept {
  const Script& script = call.script();
  if (script.nativeCommand().empty()) return 0;
  if (script.nativeKeys() == Script::NativeKeys::counted) return kScriptHead - 1;
  return call.keyCount() == 1 ? kScriptHead : 0;
}

// Whether a connection asks the server for the module as it connects (ConnectionOptions::native_module).
inline bool asksForModule(const ConnectionOptions& options) noexcept {
  return options.native_module == NativeModule::use_when_loaded;
}

// The question the handshake asks: the command the log's decisions go to.
inline constexpr std::string_view kModuleQuestion[] = {"COMMAND", "INFO", wire::kDecideCommand};

// COMMAND INFO's answer: one element per command asked, nil for a command the server does not have; a
// command's eighth field holds its tips, and the module's say its layout (wire::kLayoutTip). A module of
// another layout, or one too old to say, is left alone, and so is an error (an ACL without COMMAND): the
// script decides, as it always could.
inline constexpr std::size_t kCommandInfoTips = 7;
inline bool moduleIn(ReplyView command_info) noexcept {
  const ReplyView command = command_info[0];
  if (!command.isArray() || command.size() <= kCommandInfoTips) return false;
  const ReplyView tips = command[kCommandInfoTips];
  for (std::size_t i = 0; i < tips.size(); ++i) {
    if (!tips[i].isError() && tips[i].text() == wire::kLayoutTip) return true;  // a status, or a string (RESP3)
  }
  return false;
}

// Whether a connection that learned `loaded` at connect sends the module's commands.
inline bool sendsNative(const ConnectionOptions& options, bool loaded) noexcept {
  return options.native_module == NativeModule::required ||
         (options.native_module == NativeModule::use_when_loaded && loaded);
}

// An error reply only a call sent as the module's command gets, and what it asks for: LAYOUT (a set of
// swl 0.2 or 0.3, which the script renumbers once: the call goes again as the script), or the command
// out of reach (the server does not know it: the module was unloaded, or a failover reached a server
// without it; or the connection's ACL user may run EVALSHA but not it, NOPERM): the call did not run,
// and goes again as the script, as will the connection's next calls.
enum class NativeRefusal { none, layout, out_of_reach };

// Whether `text` holds `word`, whatever the case of either (Redis names a command as it was sent, or, in
// an ACL's refusal, in lower case).
inline bool containsIgnoringCase(std::string_view text, std::string_view word) noexcept {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (std::size_t at = 0; at + word.size() <= text.size(); ++at) {
    std::size_t i = 0;
    while (i < word.size() && lower(text[at + i]) == lower(word[i])) ++i;
    if (i == word.size()) return true;
  }
  return false;
}

inline NativeRefusal nativeRefusalOf(ReplyView reply, const Script& script) noexcept {
  const std::string_view native = script.nativeCommand();
  if (native.empty() || !reply.isError()) return NativeRefusal::none;
  if (reply.isError(wire::kLayoutError)) return NativeRefusal::layout;
  const std::string_view text = reply.text();
  const bool unknown = text.substr(0, 19) == "ERR unknown command" || reply.isError("NOPERM");
  if (unknown && containsIgnoringCase(text, native)) return NativeRefusal::out_of_reach;
  return NativeRefusal::none;
}

// A formatted script call (formattedCommand's RESP, "*<words>\r\n" first) as the module's command, into
// `out`: the command's name in place of the call's first `head` words (nativeHead), then the call's bytes
// from `rest_at`, where the "$<length>" of its word `head` begins: the same in both.
inline void formatNative(std::string& out, std::string_view script_call, std::size_t head, std::size_t rest_at,
                         std::string_view native) {
  std::size_t words = 0;
  std::from_chars(script_call.data() + 1, script_call.data() + script_call.size(), words);
  out.assign(1, '*').append(std::to_string(words - head + 1)).append("\r\n$");
  out.append(std::to_string(native.size())).append("\r\n").append(native).append("\r\n");
  out.append(script_call.substr(rest_at));
}

}  // namespace swl::detail
