#pragma once
/// \file
/// Values written as envoyproxy/ratelimit reads its environment (kelseyhightower/envconfig over Go's
/// standard library): a boolean as strconv.ParseBool takes it, a duration as time.ParseDuration does.
/// A manifest written for that server means the same here, character for character.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace swl::ratelimit {

/// strconv.ParseBool: 1, t, T, TRUE, true, True, or 0, f, F, FALSE, false, False; nothing else (not
/// "yes", not "", not " true").
inline std::optional<bool> parseGoBool(std::string_view text) {
  for (const std::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) return true;
  }
  for (const std::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) return false;
  }
  return std::nullopt;
}

namespace go_detail {

inline constexpr std::uint64_t kMost = std::uint64_t{1} << 63;  // the magnitude of int64's least value

inline bool isDigit(char c) { return c >= '0' && c <= '9'; }

// The whole part at the front of `text`, consumed (0 for none): more digits than 64 bits hold are no
// duration.
inline std::optional<std::uint64_t> takeWhole(std::string_view& text) {
  std::uint64_t whole = 0;
  while (!text.empty() && isDigit(text.front())) {
    if (whole > kMost / 10) return std::nullopt;
    whole = whole * 10 + static_cast<std::uint64_t>(text.front() - '0');
    if (whole > kMost) return std::nullopt;
    text.remove_prefix(1);
  }
  return whole;
}

// The fraction after a '.' at the front of `text`, consumed: its digits beyond what 63 bits hold are
// read and dropped, as Go's leadingFraction does.
struct Fraction {
  std::uint64_t digits = 0;
  double scale = 1;
  bool given = false;
};

inline Fraction takeFraction(std::string_view& text) {
  Fraction fraction;
  if (text.empty() || text.front() != '.') return fraction;
  text.remove_prefix(1);
  bool full = false;
  while (!text.empty() && isDigit(text.front())) {
    fraction.given = true;
    if (!full && fraction.digits <= (kMost - 1) / 10) {
      const std::uint64_t next = fraction.digits * 10 + static_cast<std::uint64_t>(text.front() - '0');
      if (next <= kMost) {
        fraction.digits = next;
        fraction.scale *= 10;
      } else {
        full = true;
      }
    } else {
      full = true;
    }
    text.remove_prefix(1);
  }
  return fraction;
}

// The nanoseconds of the unit at the front of `text`, consumed; 0 for no unit, or one Go does not know.
inline std::uint64_t takeUnit(std::string_view& text) {
  std::size_t length = 0;
  while (length < text.size() && text[length] != '.' && !isDigit(text[length])) ++length;
  const std::string_view unit = text.substr(0, length);
  text.remove_prefix(length);
  // Go takes both micro signs: U+00B5 (the micro sign) and U+03BC (the Greek letter mu).
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1'000;
  if (unit == "ms") return 1'000'000;
  if (unit == "s") return 1'000'000'000;
  if (unit == "m") return 60'000'000'000;
  if (unit == "h") return 3'600'000'000'000;
  return 0;
}

// One term of a duration ("1.5h") at the front of `text`, consumed, in nanoseconds; none when it is
// not one, or is past 2^63 ns.
inline std::optional<std::uint64_t> takeTerm(std::string_view& text) {
  if (text.front() != '.' && !isDigit(text.front())) return std::nullopt;
  const std::size_t before_whole = text.size();
  const std::optional<std::uint64_t> whole = takeWhole(text);
  if (!whole) return std::nullopt;
  const bool has_whole = text.size() != before_whole;
  const Fraction fraction = takeFraction(text);
  if (!has_whole && !fraction.given) return std::nullopt;  // ".s", say
  const std::uint64_t unit = takeUnit(text);
  if (unit == 0 || *whole > kMost / unit) return std::nullopt;
  std::uint64_t term = *whole * unit;
  if (fraction.digits > 0) {
    term +=
        static_cast<std::uint64_t>(static_cast<double>(fraction.digits) * (static_cast<double>(unit) / fraction.scale));
    if (term > kMost) return std::nullopt;
  }
  return term;
}

}  // namespace go_detail

/// time.ParseDuration: a signed sequence of decimal numbers, each with an optional fraction and a unit
/// (ns, us, µs, ms, s, m, h), as "300ms", "-1.5h" or "2h45m"; "0" alone needs no unit. Like Go's, it
/// counts in whole nanoseconds in 64 bits: a fraction finer than a nanosecond is dropped, and a duration
/// beyond about 292 years is no duration.
inline std::optional<std::chrono::nanoseconds> parseGoDuration(std::string_view text) {
  using go_detail::kMost;
  bool negative = false;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text == "0") return std::chrono::nanoseconds(0);
  if (text.empty()) return std::nullopt;
  std::uint64_t total = 0;
  while (!text.empty()) {
    const std::optional<std::uint64_t> term = go_detail::takeTerm(text);
    if (!term) return std::nullopt;
    total += *term;
    if (total > kMost) return std::nullopt;
  }
  if (negative) return std::chrono::nanoseconds(static_cast<std::int64_t>(0 - total));
  if (total > kMost - 1) return std::nullopt;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(total));
}

}  // namespace swl::ratelimit
