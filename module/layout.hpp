#pragma once
// The log's layout as the module reads and writes it: the same numbers and member names as the Lua's
// (include/swl/algorithms/detail/sliding_window_log/layout.hpp says what each one is), so that one key
// can be decided by either. No I/O and no Redis: tests/module/test_module_sums.cpp checks the names
// against the Lua's own.

#include "sums.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace swl::native {

// Every entry's time lies below 2^53; the sums' nodes lie at and above it.
inline constexpr std::int64_t kTimesEnd = std::int64_t{1} << 53;
// Counted by entries: at most kTrim slid-out entries go, on one call in kTrimEvery.
inline constexpr std::int64_t kTrim = 16;
inline constexpr std::int64_t kTrimEvery = 8;
// Counted by units: at most kUnitsTrim go, on every call that records.
inline constexpr std::int64_t kUnitsTrim = 8;
// Members read at or below a window's start: marks, then entries.
inline constexpr std::size_t kLow = kUnitsTrim + 3;
// Entries read at once where a search costs least (freedAfter).
inline constexpr std::int64_t kNear = 16;
// At most this many members are walked from a place in the set before asking Redis's command, which finds
// a rank in O(log n) (module/sorted_set.hpp).
inline constexpr std::int64_t kWalk = 32;
// The first byte of a member says what it is.
inline constexpr char kMarkByte = '!';
inline constexpr char kBookkeepingByte = '#';
inline constexpr char kUnitsByte = '*';
inline constexpr char kSettledByte = '+';
// 2^53 and 2^50 beyond it, again and again: the scores of each level's nodes (even numbers).
inline constexpr std::array<std::int64_t, kLevels> kNodeBand{9007199254740992, 10133099161583616,
                                                             10133099161583616 + 1125899906842624,
                                                             10133099161583616 + 2 * 1125899906842624};

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

// The bookkeeping member's name: '#' and fifteen big-endian doubles (the Lua's logSums encode).
inline std::string bookkeepingName(const Book& book) {
  std::string name(1, kBookkeepingByte);
  name.reserve(121);
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
  if (name.size() != 121 || name[0] != kBookkeepingByte) return std::nullopt;
  Book book;
  std::int64_t* const fields[] = {&book.extra,     &book.oldest,  &book.next,  &book.newest,
                                  &book.last_unit, &book.horizon, &book.writes};
  std::size_t at = 1;
  for (std::int64_t* field : fields) *field = readInteger(name, (at += 8) - 8);
  for (std::int64_t& sum : book.tail) sum = readInteger(name, (at += 8) - 8);
  for (std::int64_t& sum : book.gone) sum = readInteger(name, (at += 8) - 8);
  return book;
}

// A node's member: '#', its level, its sum and its index (two big-endian doubles); and its score.
inline std::string nodeName(int level, std::int64_t sum, std::int64_t index) {
  std::string name{kBookkeepingByte, static_cast<char>(level)};
  appendDouble(name, static_cast<double>(sum));
  appendDouble(name, static_cast<double>(index));
  return name;
}
inline std::int64_t nodeScore(int level, std::int64_t index) { return kNodeBand[level - 1] + 2 * index; }
// A node member's sum and index.
struct NodeRead {
  std::int64_t sum = 0;
  std::int64_t index = 0;
};
inline NodeRead nodeOf(std::string_view name) { return {readInteger(name, 2), readInteger(name, 10)}; }

// An entry that carries its units: '*' and a big-endian double, then the member.
inline std::string unitsEntryName(std::int64_t units, std::string_view member) {
  std::string name(1, kUnitsByte);
  appendDouble(name, static_cast<double>(units));
  return name.append(member);
}

// An entry's units: '*' or '+' and a double, then the member; 0.2's 'member*units' and 'member=units'
// (the digits that end the name after its last '*' or '='); otherwise one.
inline std::int64_t unitsOf(std::string_view member) {
  if (!member.empty() && (member[0] == kUnitsByte || member[0] == kSettledByte) && member.size() >= 9) {
    return readInteger(member, 1);
  }
  std::size_t digits = member.size();
  while (digits > 0 && member[digits - 1] >= '0' && member[digits - 1] <= '9') --digits;
  if (digits == member.size() || digits == 0 || (member[digits - 1] != '*' && member[digits - 1] != '=')) return 1;
  return static_cast<std::int64_t>(std::stod(std::string(member.substr(digits))));
}

// An integer as the Lua's text() writes it ('%.0f' of a double that holds it exactly).
inline std::string integerText(std::int64_t value) { return std::to_string(value); }

}  // namespace swl::native
