// The message that names two descriptors envoyproxy/ratelimit takes for one: in one file (the YAML
// reader) or in two files of one domain merged (the Configuration).

#include <ratelimit/config/domain.hpp>
#include <ratelimit/config/error.hpp>

#include <cstdint>
#include <string>

namespace swl::ratelimit {

std::string repeatMessage(const std::string& domain, const RuleTree& tree, const RuleTree::Repeat& repeat) {
  const SourceLocation second = tree.locationOf(repeat.second);
  const SourceLocation first = tree.locationOf(repeat.first);
  std::string message = lineAt(second.file, second.line) + "a second descriptor " + domain + "." +
                        tree.pathOf(repeat.second) + ", the first at " +
                        (first.file == second.file ? "line " + std::to_string(first.line)
                                                   : first.file + ":" + std::to_string(first.line));
  if (tree.keyOf(repeat.first) == tree.keyOf(repeat.second)) return message + ": siblings differ in key or value";
  const auto described = [&](std::uint32_t node) {
    return "the key " + inQuotes(tree.keyOf(node)) +
           (tree.valueOf(node).empty() ? "" : " with the value " + inQuotes(tree.valueOf(node)));
  };
  return message + ": envoyproxy/ratelimit names " + described(repeat.first) + " and " + described(repeat.second) +
         " alike (key_value), and takes them for one";
}

}  // namespace swl::ratelimit
