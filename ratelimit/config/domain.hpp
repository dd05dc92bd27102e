#pragma once
/// \file
/// One file's domain: its name, its descriptors as a RuleTree, and what the file says that is likely a
/// slip. Made from a file's text by the YAML reader (yaml/), which is the only way one is made; the
/// Configuration (configuration.hpp) gathers them.

#include <ratelimit/config/rule.hpp>
#include <ratelimit/config/rule_tree.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace swl::ratelimit {

/// One file's domain and its descriptors.
struct Domain {
  std::string name;
  /// Where `domain:` is written.
  SourceLocation source;
  RuleTree rules;
  /// What the file says that is read as envoyproxy/ratelimit reads it but is likely a slip: a key
  /// where it means nothing, a key given twice, a second YAML document. "file:line: ..." each.
  std::vector<std::string> warnings;
};

/// The domain one file's text defines (envoyproxy/ratelimit's YAML, configuration.hpp says how it is
/// read); `file` names it in messages. Anything wrong is a ConfigError. Defined by yaml/.
Domain parseDomain(std::string_view yaml, const std::string& file);

/// "b.yaml:7: a second descriptor shop.user_admin, the first at line 3: ...": two descriptors of
/// `domain` that envoyproxy/ratelimit takes for one.
std::string repeatMessage(const std::string& domain, const RuleTree& tree, const RuleTree::Repeat& repeat);

}  // namespace swl::ratelimit
