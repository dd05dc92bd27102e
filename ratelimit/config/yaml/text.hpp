#pragma once
/// \file
/// The text of a configuration file, checked before any YAML is read: yaml.v2's reader refuses a file
/// for any byte that is not UTF-8 (or UTF-16 with its byte order mark) of a character YAML allows, even
/// in a comment, and so does swl-ratelimit, at the line of that byte. A domain, key or value in any other
/// encoding could never match Envoy's strings, which are UTF-8. No I/O: text in, text out.

#include <ratelimit/config/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

namespace swl::ratelimit::yaml {

/// The line (from 1) that holds the byte at `offset` of `text`.
inline int lineOfOffset(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

/// Whether YAML allows the character `code` in a file (YAML 1.1's printable set, as libyaml checks it).
inline bool allowedInYaml(std::uint32_t code) {
  return code == 0x09 || code == 0x0A || code == 0x0D || (code >= 0x20 && code <= 0x7E) || code == 0x85 ||
         (code >= 0xA0 && code <= 0xD7FF) || (code >= 0xE000 && code <= 0xFFFD) ||
         (code >= 0x10000 && code <= 0x10FFFF);
}

namespace text_detail {

inline std::string hexByte(unsigned char byte) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[byte >> 4] + kDigits[byte & 15];
}

inline std::string codePoint(std::uint32_t code) {
  std::ostringstream text;
  text << "U+" << std::uppercase << std::hex << code;
  return text.str();
}

inline void appendUtf8(std::uint32_t code, std::string& out) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// UTF-16 with its byte order mark, as yaml.v2 takes it, into UTF-8 (without the mark).
inline std::string fromUtf16(std::string_view bytes, bool big_endian, const std::string& file) {
  std::string text;
  text.reserve(bytes.size());
  int line = 1;
  const auto unit = [&](std::size_t at) {
    const auto high = static_cast<unsigned char>(bytes[at + (big_endian ? 0 : 1)]);
    const auto low = static_cast<unsigned char>(bytes[at + (big_endian ? 1 : 0)]);
    return static_cast<std::uint32_t>(high << 8 | low);
  };
  for (std::size_t at = 2; at < bytes.size(); at += 2) {
    if (at + 1 >= bytes.size()) throw ConfigError(lineAt(file, line) + "the UTF-16 text ends in half a character");
    std::uint32_t code = unit(at);
    if (code >= 0xDC00 && code <= 0xDFFF) {
      throw ConfigError(lineAt(file, line) + "not UTF-16: a low surrogate with no high one before it");
    }
    if (code >= 0xD800 && code <= 0xDBFF) {
      const std::uint32_t next = at + 3 < bytes.size() ? unit(at + 2) : 0;
      if (next < 0xDC00 || next > 0xDFFF) {
        throw ConfigError(lineAt(file, line) + "not UTF-16: a high surrogate with no low one after it");
      }
      code = 0x10000 + ((code - 0xD800) << 10) + (next - 0xDC00);
      at += 2;
    }
    if (!allowedInYaml(code)) {
      throw ConfigError(lineAt(file, line) + "the character " + codePoint(code) + ", which YAML does not allow");
    }
    if (code == '\n') ++line;
    appendUtf8(code, text);
  }
  return text;
}

}  // namespace text_detail

/// The file's text as UTF-8: `bytes` itself, or its conversion (kept in `converted`) when it is UTF-16.
/// Anything yaml.v2 would refuse is a ConfigError at its line in `file`: bytes that are not UTF-8, or a
/// character YAML does not allow (a control character).
inline std::string_view checkedText(std::string_view bytes, std::string& converted, const std::string& file) {
  using text_detail::hexByte;
  if (bytes.size() >= 2 && ((bytes[0] == '\xFF' && bytes[1] == '\xFE') || (bytes[0] == '\xFE' && bytes[1] == '\xFF'))) {
    converted = text_detail::fromUtf16(bytes, bytes[0] == '\xFE', file);
    return converted;
  }
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  std::size_t at = 0;
  while (at < size) {
    const unsigned char first = data[at];
    if (first >= 0x20 && first < 0x7F) {  // most of any file
      ++at;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (first < 0x80) {
      length = 1;
      code = first;
    } else if (first >= 0xC2 && first <= 0xDF) {
      length = 2;
      code = first & 0x1F;
    } else if (first >= 0xE0 && first <= 0xEF) {
      length = 3;
      code = first & 0x0F;
    } else if (first >= 0xF0 && first <= 0xF4) {
      length = 4;
      code = first & 0x07;
    } else {
      throw ConfigError(lineAt(file, lineOfOffset(bytes, at)) + "not UTF-8 (the byte " + hexByte(first) +
                        "): envoyproxy/ratelimit reads UTF-8 only");
    }
    for (std::size_t next = 1; next < length; ++next) {
      if (at + next >= size || (data[at + next] & 0xC0) != 0x80) {
        throw ConfigError(lineAt(file, lineOfOffset(bytes, at)) + "not UTF-8 (the byte " + hexByte(first) +
                          " starts a character that is not finished): envoyproxy/ratelimit reads UTF-8 only");
      }
      code = code << 6 | (data[at + next] & 0x3F);
    }
    const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
    if (overlong || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) {
      throw ConfigError(lineAt(file, lineOfOffset(bytes, at)) + "not UTF-8 (an encoding UTF-8 forbids, from the byte " +
                        hexByte(first) + "): envoyproxy/ratelimit reads UTF-8 only");
    }
    if (!allowedInYaml(code)) {
      throw ConfigError(lineAt(file, lineOfOffset(bytes, at)) + "the character " + text_detail::codePoint(code) +
                        ", which YAML does not allow (a control character)");
    }
    at += length;
  }
  return bytes;
}

}  // namespace swl::ratelimit::yaml
