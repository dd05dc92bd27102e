#pragma once
/// \file
/// Values written as envoyproxy/ratelimit reads its environment (kelseyhightower/envconfig over Go's
/// standard library): a boolean as strconv.ParseBool takes it, a duration as time.ParseDuration does.
/// A manifest written for that server means the same here, character for character.

#include <chrono>
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

/// time.ParseDuration: a signed sequence of decimal numbers, each with an optional fraction and a unit
/// (ns, us, µs, ms, s, m, h), as "300ms", "-1.5h" or "2h45m"; "0" alone needs no unit. Like Go's, it
/// counts in whole nanoseconds in 64 bits: a fraction finer than a nanosecond is dropped, and a duration
/// beyond about 292 years is no duration.
inline std::optional<std::chrono::nanoseconds> parseGoDuration(std::string_view text) {
  constexpr std::uint64_t kMost = std::uint64_t{1} << 63;  // the magnitude of int64's least value
  bool negative = false;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text == "0") return std::chrono::nanoseconds(0);
  if (text.empty()) return std::nullopt;
  const auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
  std::uint64_t total = 0;
  while (!text.empty()) {
    if (text.front() != '.' && !isDigit(text.front())) return std::nullopt;
    // The whole part: more digits than 64 bits hold are no duration.
    std::uint64_t whole = 0;
    const std::size_t before_whole = text.size();
    while (!text.empty() && isDigit(text.front())) {
      if (whole > kMost / 10) return std::nullopt;
      whole = whole * 10 + static_cast<std::uint64_t>(text.front() - '0');
      if (whole > kMost) return std::nullopt;
      text.remove_prefix(1);
    }
    const bool has_whole = text.size() != before_whole;
    // The fraction: its digits beyond what 63 bits hold are read and dropped, as Go's leadingFraction does.
    std::uint64_t fraction = 0;
    double scale = 1;
    bool has_fraction = false;
    if (!text.empty() && text.front() == '.') {
      text.remove_prefix(1);
      bool full = false;
      while (!text.empty() && isDigit(text.front())) {
        has_fraction = true;
        if (!full && fraction <= (kMost - 1) / 10) {
          const std::uint64_t next = fraction * 10 + static_cast<std::uint64_t>(text.front() - '0');
          if (next <= kMost) {
            fraction = next;
            scale *= 10;
          } else {
            full = true;
          }
        } else {
          full = true;
        }
        text.remove_prefix(1);
      }
    }
    if (!has_whole && !has_fraction) return std::nullopt;  // ".s", say
    std::size_t unit_length = 0;
    while (unit_length < text.size() && text[unit_length] != '.' && !isDigit(text[unit_length])) ++unit_length;
    const std::string_view unit_name = text.substr(0, unit_length);
    text.remove_prefix(unit_length);
    std::uint64_t unit = 0;
    // Go takes both micro signs: U+00B5 (the micro sign) and U+03BC (the Greek letter mu).
    if (unit_name == "ns") {
      unit = 1;
    } else if (unit_name == "us" || unit_name == "\xC2\xB5s" || unit_name == "\xCE\xBCs") {
      unit = 1'000;
    } else if (unit_name == "ms") {
      unit = 1'000'000;
    } else if (unit_name == "s") {
      unit = 1'000'000'000;
    } else if (unit_name == "m") {
      unit = 60'000'000'000;
    } else if (unit_name == "h") {
      unit = 3'600'000'000'000;
    } else {
      return std::nullopt;  // no unit, or one Go does not know
    }
    if (whole > kMost / unit) return std::nullopt;
    whole *= unit;
    if (fraction > 0) {
      whole += static_cast<std::uint64_t>(static_cast<double>(fraction) * (static_cast<double>(unit) / scale));
      if (whole > kMost) return std::nullopt;
    }
    total += whole;
    if (total > kMost) return std::nullopt;
  }
  if (negative) return std::chrono::nanoseconds(static_cast<std::int64_t>(0 - total));
  if (total > kMost - 1) return std::nullopt;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(total));
}

}  // namespace swl::ratelimit
