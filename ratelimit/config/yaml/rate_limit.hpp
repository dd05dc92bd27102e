#pragma once
/// \file
/// What one descriptor's rate_limit makes: its Rule, checked as envoyproxy/ratelimit checks it, then as
/// swl can keep it; or the refusal, at the line it names. A plain function of what the rate_limit says
/// (written.hpp), private to the YAML reader.

#include <ratelimit/config/rule.hpp>
#include <ratelimit/config/yaml/written.hpp>

#include <optional>
#include <string>

namespace swl::ratelimit::reader {

/// Something the file says at a line.
struct Said {
  int line = 0;
  std::string what;
};

/// A rate_limit made into a rule: the rule, or why it is refused; and what it says that is read as
/// envoyproxy/ratelimit reads it, but likely a slip.
struct MadeRule {
  std::optional<Rule> rule;
  std::optional<Said> refusal;
  std::optional<Said> warning;
};

/// The rule `written` makes, with its name, its replaces and the line of its `rate_limit:` (the
/// descriptor's own flags, its stats key and its path are the reader's to add). Takes `written`'s
/// texts.
MadeRule makeRule(WrittenRateLimit& written);

}  // namespace swl::ratelimit::reader
