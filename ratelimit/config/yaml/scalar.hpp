#pragma once
/// \file
/// A YAML scalar, read as gopkg.in/yaml.v2 reads it (resolve.go), which is what envoyproxy/ratelimit's
/// loader sees: an unquoted scalar is null (empty, `~`, `null`), a boolean (YAML 1.1's yes/no/on/off
/// and y/n too), an integer in Go's notation (0x1F, 0o17, 017, 0b101, 1_000), a float, or text; a quoted
/// or block scalar is text; a scalar tagged !!bool, !!int, !!float or !!null must read as one. No I/O:
/// these are plain functions of the scalar's text.

#include <ratelimit/config/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace swl::ratelimit::yaml {

/// How a scalar is written, which decides how it is resolved.
enum class ScalarStyle : std::uint8_t {
  plain,   // unquoted, untagged: resolved (`5` is a number)
  quoted,  // quoted or a block scalar, or tagged `!`: text
  tagged,  // an explicit tag (`!!int 5`, `!mine 5`): what the tag says
};

/// One scalar as the parser gives it.
struct Scalar {
  std::string_view text;
  int line = 0;
  ScalarStyle style = ScalarStyle::plain;
  std::string_view tag;  // the explicit tag, resolved ("tag:yaml.org,2002:int"), for ScalarStyle::tagged
};

/// What a scalar is, once resolved. big_integer: a whole number past int64 (up to 2^64 - 1), which
/// yaml.v2 decodes as a uint64.
enum class Kind : std::uint8_t { null, boolean, integer, big_integer, floating, text };

struct Resolved {
  Kind kind = Kind::text;
  bool boolean = false;
  std::int64_t integer = 0;  // for Kind::integer
  double floating = 0;       // for Kind::floating
};

/// strconv.ParseUint(text, 0, 64): a 0x, 0o, 0b or 0 (octal) prefix, no sign. nullopt: not a number in
/// that notation, or above 2^64 - 1.
inline std::optional<std::uint64_t> parseGoUnsigned(std::string_view text) {
  unsigned base = 10;
  if (text.size() >= 2 && text[0] == '0') {
    const char mark = static_cast<char>(text[1] | 0x20);
    if (mark == 'x' || mark == 'o' || mark == 'b') {
      base = mark == 'x' ? 16 : mark == 'o' ? 8 : 2;
      text.remove_prefix(2);
    } else {
      base = 8;
      text.remove_prefix(1);
    }
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t number = 0;
  for (const char c : text) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
      digit = static_cast<unsigned>((c | 0x20) - 'a' + 10);
    } else {
      return std::nullopt;
    }
    if (digit >= base) return std::nullopt;
    if (number > (UINT64_MAX - digit) / base) return std::nullopt;
    number = number * base + digit;
  }
  return number;
}

/// yaml.v2's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
inline bool looksLikeFloat(std::string_view text) {
  std::size_t at = 0;
  const auto digits = [&] {
    const std::size_t start = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    return at - start;
  };
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
  if (at < text.size() && text[at] == '.') {
    ++at;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (at < text.size() && text[at] == '.') {
      ++at;
      digits();
    }
  }
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
    if (digits() == 0) return false;
  }
  return at == text.size();
}

namespace scalar_detail {

inline bool oneOf(std::string_view text, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), text) != words.end();
}

// A plain scalar that starts as a number does ('.', a sign or a digit): a whole number as
// strconv.ParseInt (then ParseUint) reads it, `_` dropped, else a float as strconv.ParseFloat does, else
// text.
inline Resolved resolveNumber(std::string_view text) {
  Resolved resolved;
  const char first = text[0];
  std::string plain(text);
  if (first != '.') plain.erase(std::remove(plain.begin(), plain.end(), '_'), plain.end());
  std::string_view digits = plain;
  const bool negative = !digits.empty() && digits[0] == '-';
  if (first != '.' && !digits.empty() && (digits[0] == '+' || digits[0] == '-')) digits.remove_prefix(1);
  const bool signed_text = digits.size() != plain.size();
  if (first != '.') {
    if (const auto magnitude = parseGoUnsigned(digits)) {
      if (!negative && *magnitude <= static_cast<std::uint64_t>(INT64_MAX)) {
        resolved.kind = Kind::integer;
        resolved.integer = static_cast<std::int64_t>(*magnitude);
        return resolved;
      }
      if (negative && *magnitude <= static_cast<std::uint64_t>(INT64_MAX) + 1) {
        resolved.kind = Kind::integer;
        resolved.integer = static_cast<std::int64_t>(0 - *magnitude);
        return resolved;
      }
      // ParseUint takes no sign: a signed number past int64 goes on to be a float.
      if (!signed_text) {
        resolved.kind = Kind::big_integer;
        return resolved;
      }
    }
  }
  if (looksLikeFloat(plain)) {
    errno = 0;
    const double value = std::strtod(plain.c_str(), nullptr);
    // strconv.ParseFloat fails past the largest double, and the text is then just text.
    if (!(errno == ERANGE && std::isinf(value))) {
      resolved.kind = Kind::floating;
      resolved.floating = value;
    }
  }
  return resolved;
}

}  // namespace scalar_detail

/// What yaml.v2 makes of an unquoted, untagged scalar.
inline Resolved resolvePlain(std::string_view text) {
  using scalar_detail::oneOf;
  Resolved resolved;
  if (text.empty()) {
    resolved.kind = Kind::null;
    return resolved;
  }
  // yaml.v2 goes by the first character; every word it knows has at most 5 (most scalars are text).
  const char first = text[0];
  const bool word = text.size() <= 5 && std::string_view("yYnNtTfFoO~.+-").find(first) != std::string_view::npos;
  const bool number = first == '.' || first == '+' || first == '-' || (first >= '0' && first <= '9');
  if (!word && !number) return resolved;
  if (oneOf(text, {"~", "null", "Null", "NULL"})) {
    resolved.kind = Kind::null;
  } else if (oneOf(text, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
    resolved.kind = Kind::boolean;
    resolved.boolean = true;
  } else if (oneOf(text, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
    resolved.kind = Kind::boolean;
  } else if (oneOf(text, {".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
                          "-.INF"})) {
    resolved.kind = Kind::floating;
    resolved.floating = text[1] == 'n' || text[1] == 'N' ? std::nan("") : text[0] == '-' ? -HUGE_VAL : HUGE_VAL;
  } else if (number) {
    return scalar_detail::resolveNumber(text);
  }
  return resolved;
}

/// What yaml.v2 makes of `scalar`. A scalar tagged !!bool, !!int, !!float or !!null that does not read
/// as one is a ConfigError at its line in `file`; any other tag (!!str, !!timestamp, one's own) is text.
inline Resolved resolveScalar(const Scalar& scalar, const std::string& file) {
  if (scalar.style == ScalarStyle::plain) return resolvePlain(scalar.text);
  if (scalar.style == ScalarStyle::quoted) return Resolved{};
  constexpr std::string_view kCoreTags = "tag:yaml.org,2002:";
  if (scalar.tag.substr(0, kCoreTags.size()) != kCoreTags) return Resolved{};  // a tag of one's own: text
  const std::string_view tag = scalar.tag.substr(kCoreTags.size());
  if (tag != "bool" && tag != "int" && tag != "float" && tag != "null") return Resolved{};
  Resolved resolved = resolvePlain(scalar.text);
  if (tag == "float" && resolved.kind == Kind::integer) {
    resolved.kind = Kind::floating;
    resolved.floating = static_cast<double>(resolved.integer);
  }
  const bool fits = (tag == "bool" && resolved.kind == Kind::boolean) ||
                    (tag == "int" && (resolved.kind == Kind::integer || resolved.kind == Kind::big_integer)) ||
                    (tag == "float" && resolved.kind == Kind::floating) ||
                    (tag == "null" && resolved.kind == Kind::null);
  if (!fits) {
    throw ConfigError(lineAt(file, scalar.line) + "not valid YAML: \"" + std::string(scalar.text) + "\" is not a !!" +
                      std::string(tag));
  }
  return resolved;
}

/// How a scalar reads in a message: "the text \"5\"", "the number 1.5", "yes (a boolean in YAML 1.1)",
/// "null".
inline std::string described(const Scalar& scalar, const Resolved& resolved) {
  switch (resolved.kind) {
    case Kind::null:
      return "null";
    case Kind::boolean:
      return std::string(scalar.text) + " (a boolean in YAML 1.1)";
    case Kind::integer:
    case Kind::big_integer:
    case Kind::floating:
      return "the number " + std::string(scalar.text);
    case Kind::text:
      break;
  }
  return "the text " + inQuotes(scalar.text);
}

}  // namespace swl::ratelimit::yaml
