#pragma once
/// \file
/// The one error of swl-ratelimit's configuration, and the words its messages are made of: every part of
/// the loader (the text, the YAML events, the reader, the files) refuses with a ConfigError that begins
/// "file:line: ".

#include <swl/error.hpp>

#include <string>
#include <string_view>

namespace swl::ratelimit {

/// A configuration file is wrong; the message says "file:line: what is wrong".
class ConfigError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// "file:line: ", the start of every message about a place in a file.
inline std::string lineAt(const std::string& file, int line) { return file + ":" + std::to_string(line) + ": "; }

/// `text` in double quotes for a message, cut after 60 characters.
inline std::string inQuotes(std::string_view text) {
  constexpr std::size_t kLongest = 60;
  if (text.size() > kLongest) return "\"" + std::string(text.substr(0, kLongest)) + "...\"";
  return "\"" + std::string(text) + "\"";
}

}  // namespace swl::ratelimit
