#pragma once
// Script: a Lua script swl runs with EVALSHA, and ScriptCall: the arguments of one such call.
//
// The SHA-1 is known from the text, so every call goes straight to EVALSHA; the client that runs it
// (see redis_client.hpp) sends SCRIPT LOAD only when a server answers NOSCRIPT (fresh, flushed,
// restarted or failed over), then repeats that call once. EVAL is never used.

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

  const std::string& name() const noexcept { return name_; }
  std::string_view text() const noexcept { return text_; }
  std::string_view sha() const noexcept { return sha_; }

 private:
  std::string name_;
  std::string_view text_;  // scripts are string literals: the text outlives every call
  std::string sha_;
};

// "EVALSHA sha numkeys key... arg..." as views: the keys and arguments must outlive the call. Small and
// fixed-size, so building one costs no allocation on the hot path.
class ScriptCall {
 public:
  static constexpr std::size_t kMaxKeys = 9;
  static constexpr std::size_t kMaxArguments = 48;

  ScriptCall(const Script& script, std::initializer_list<std::string_view> keys,
             std::initializer_list<std::string_view> args)
      : ScriptCall(script, keys.begin(), keys.size(), args.begin(), args.size()) {}

  ScriptCall(const Script& script, const std::string_view* keys, std::size_t key_count, const std::string_view* args,
             std::size_t arg_count)
      : script_(&script), key_count_(key_count) {
    static constexpr std::string_view kKeyCounts[kMaxKeys + 1] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    if (key_count > kMaxKeys || 3 + key_count + arg_count > kMaxArguments) {
      throw InvalidArgument("swl::ScriptCall of " + script.name() + ": " + std::to_string(key_count) + " keys and " +
                            std::to_string(arg_count) + " arguments are more than a call holds");
    }
    argv_[argc_++] = "EVALSHA";
    argv_[argc_++] = script.sha();
    argv_[argc_++] = kKeyCounts[key_count];
    for (std::size_t i = 0; i < key_count; ++i) argv_[argc_++] = keys[i];
    for (std::size_t i = 0; i < arg_count; ++i) argv_[argc_++] = args[i];
  }

  const Script& script() const noexcept { return *script_; }
  const std::string_view* argv() const noexcept { return argv_.data(); }
  std::size_t argc() const noexcept { return argc_; }
  std::size_t keyCount() const noexcept { return key_count_; }
  // A cluster routes the call by its first key.
  std::string_view key(std::size_t index) const noexcept { return argv_[3 + index]; }

 private:
  const Script* script_;
  std::array<std::string_view, kMaxArguments> argv_;
  std::size_t argc_ = 0;
  std::size_t key_count_;
};

}  // namespace swl
