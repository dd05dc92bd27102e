#pragma once
// The log's layout as the module reads and writes it: the wire format's numbers and bytes
// (swl/detail/script/wire.hpp), which the Lua's are made from, and its members' names, encoded and read
// as the Lua's are (swl/algorithms/detail/sliding_window_log/ says what each one is), so that one key can
// be decided by either. No I/O and no Redis: tests/test_module_sums.cpp checks the names against the
// Lua's own.

#include "sums.hpp"

#include <swl/detail/script/wire.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace swl::native {

// The wire format's numbers, bytes and sizes (swl/detail/script/wire.hpp), under the names the module's
// parts use.
namespace wire = swl::detail::wire;
using wire::kBookkeepingByte;
using wire::kLow;
using wire::kMarkByte;
using wire::kNear;
using wire::kSettledByte;
using wire::kTimesEnd;
using wire::kTrim;
using wire::kTrimEvery;
using wire::kUnitsByte;
using wire::kUnitsTrim;
// A double as struct.pack('>d') writes it, and back.
inline void appendDouble(std::string& out, double value) {
  unsigned char bytes[8];
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  for (int i = 7; i >= 0; --i, bits >>= 8) bytes[i] = static_cast<unsigned char>(bits & 0xff);
  out.append(reinterpret_cast<const char*>(bytes), sizeof bytes);
}
inline double readDouble(std::string_view text, std::size_t at) {
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<unsigned char>(text[at + i]);
  double value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
// A number the Lua keeps as a double, read back as the integer it is.
inline std::int64_t readInteger(std::string_view text, std::size_t at) {
  return static_cast<std::int64_t>(readDouble(text, at));
}

// The bookkeeping member's name: kBookkeepingByte and kBookFields big-endian doubles (the Lua's logSums
// encode).
inline std::string bookkeepingName(const Book& book) {
  std::string name(1, kBookkeepingByte);
  name.reserve(wire::kBookBytes);
  for (const std::int64_t field :
       {book.extra, book.oldest, book.next, book.newest, book.last_unit, book.horizon, book.writes}) {
    appendDouble(name, static_cast<double>(field));
  }
  for (const std::int64_t sum : book.tail) appendDouble(name, static_cast<double>(sum));
  for (const std::int64_t sum : book.gone) appendDouble(name, static_cast<double>(sum));
  return name;
}
// The bookkeeping a name holds; nullopt for a name of another layout (0.2's or 0.3's).
inline std::optional<Book> bookkeepingOf(std::string_view name) {
  if (name.size() != wire::kBookBytes || name[0] != kBookkeepingByte) return std::nullopt;
  Book book;
  std::int64_t* const fields[] = {&book.extra,     &book.oldest,  &book.next,  &book.newest,
                                  &book.last_unit, &book.horizon, &book.writes};
  std::size_t at = 1;
  for (std::int64_t* field : fields) *field = readInteger(name, (at += 8) - 8);
  for (std::int64_t& sum : book.tail) sum = readInteger(name, (at += 8) - 8);
  for (std::int64_t& sum : book.gone) sum = readInteger(name, (at += 8) - 8);
  return book;
}

// A node's member: kBookkeepingByte, its level, its sum and its index (two big-endian doubles); and its
// score.
inline std::string nodeName(int level, std::int64_t sum, std::int64_t index) {
  std::string name{kBookkeepingByte, static_cast<char>(level)};
  appendDouble(name, static_cast<double>(sum));
  appendDouble(name, static_cast<double>(index));
  return name;
}
inline std::int64_t nodeScore(int level, std::int64_t index) { return wire::nodeBand(level) + 2 * index; }
// A node member's sum and index.
struct NodeRead {
  std::int64_t sum = 0;
  std::int64_t index = 0;
};
inline NodeRead nodeOf(std::string_view name) { return {readInteger(name, 2), readInteger(name, 10)}; }

// An entry that carries its units: kUnitsByte and a big-endian double, then the member.
inline std::string unitsEntryName(std::int64_t units, std::string_view member) {
  std::string name(1, kUnitsByte);
  appendDouble(name, static_cast<double>(units));
  return name.append(member);
}

// An entry's units: kUnitsByte or kSettledByte and a double, then the member; 0.2's, the digits that end
// the name after one of wire::kOldUnitsSeparators; otherwise one.
inline std::int64_t unitsOf(std::string_view member) {
  if (!member.empty() && (member[0] == kUnitsByte || member[0] == kSettledByte) && member.size() >= 9) {
    return readInteger(member, 1);
  }
  std::size_t digits = member.size();
  while (digits > 0 && member[digits - 1] >= '0' && member[digits - 1] <= '9') --digits;
  if (digits == member.size() || digits == 0 ||
      wire::kOldUnitsSeparators.find(member[digits - 1]) == std::string_view::npos) {
    return 1;
  }
  return static_cast<std::int64_t>(std::stod(std::string(member.substr(digits))));
}

// An integer as the Lua's text() writes it ('%.0f' of a double that holds it exactly).
inline std::string integerText(std::int64_t value) { return std::to_string(value); }

// A mark that says its horizon: the mark, HORIZON and the horizon.
inline std::string markWithHorizon(std::string_view mark, std::int64_t horizon) {
  return std::string(mark).append(1, wire::kHorizonSeparator).append(integerText(horizon));
}

// A repeated entry's name (a member policy that repeats itself): the name, REPEAT and its number.
inline std::string repeatedEntryName(std::string_view named, std::int64_t number) {
  return std::string(named).append(1, wire::kRepeatSeparator).append(integerText(number));
}

}  // namespace swl::native
