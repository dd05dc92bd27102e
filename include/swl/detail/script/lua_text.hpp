#pragma once
// Every script's Lua is written as R"lua(...)lua"sv. The literal then carries its length; a plain
// R"lua(...)lua" turned into a string_view has the compiler count its characters one by one at compile
// time: about 110 KB of Lua, 0.2 s of every file that includes swl (bench/compile_time.sh).
//
// Lua made of numbers kept in C++ (the log's wire format, algorithms/detail/sliding_window_log/wire.hpp)
// is a LuaText, written at compile time into a constexpr variable, and goes into a script as a part of
// its own between the written texts: a few short lines, not a copy of the texts around them.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace swl {

using std::string_view_literals::operator""sv;

namespace detail {

// One byte as a Lua string ('c'), for LuaText::line.
struct LuaQuoted {
  char byte;
};
constexpr LuaQuoted luaQuoted(char byte) { return {byte}; }

// Lua text made at compile time, of at most Capacity bytes.
template <std::size_t Capacity>
class LuaText {
 public:
  // A line of Lua: its parts (texts, whole numbers, quoted bytes) in turn, then the line's end.
  template <class... Parts>
  constexpr LuaText& line(const Parts&... parts) {
    (put(parts), ...);
    push('\n');
    return *this;
  }
  constexpr LuaText& add(std::string_view text) {
    for (const char c : text) push(c);
    return *this;
  }
  // A whole number, as Lua reads it back exactly (below 2^53).
  constexpr LuaText& add(std::int64_t number) {
    if (number < 0) push('-');
    char digits[20] = {};
    int count = 0;
    do {
      const std::int64_t digit = number % 10;
      digits[count++] = static_cast<char>('0' + (digit < 0 ? -digit : digit));
      number /= 10;
    } while (number != 0);
    while (count > 0) push(digits[--count]);
    return *this;
  }
  // One byte as a Lua string: 'c'.
  constexpr LuaText& quoted(char byte) {
    push('\'');
    push(byte);
    push('\'');
    return *this;
  }
  constexpr std::string_view view() const { return {chars_.data(), size_}; }

 private:
  constexpr void put(std::string_view text) { add(text); }
  constexpr void put(const char* text) { add(std::string_view(text)); }
  constexpr void put(std::int64_t number) { add(number); }
  constexpr void put(int number) { add(std::int64_t{number}); }
  constexpr void put(std::size_t number) { add(static_cast<std::int64_t>(number)); }
  constexpr void put(LuaQuoted quoted) { this->quoted(quoted.byte); }

  constexpr void push(char c) {
    if (size_ == Capacity) throw std::length_error("swl: a LuaText outgrew its capacity");
    chars_[size_++] = c;
  }

  std::array<char, Capacity> chars_{};
  std::size_t size_ = 0;
};

// A part of a script: one text, or several in order (a written text, a made one, a written one...).
template <class Part>
void appendPart(std::string& script, const Part& part) {
  if constexpr (std::is_convertible_v<const Part&, std::string_view>) {
    script.append(std::string_view(part));
  } else {
    for (const std::string_view text : part) script.append(text);
  }
}

// A part, whole, as a script holds it.
template <class Part>
std::string wholePart(const Part& part) {
  std::string whole;
  appendPart(whole, part);
  return whole;
}

}  // namespace detail
}  // namespace swl
