#pragma once
/// \file
/// The descriptors of one domain as a tree, and the rule a request's descriptor reaches in it, as
/// envoyproxy/ratelimit finds it. A descriptor's entries are walked one level each: at every level the
/// node for the entry's key and exact value is taken, else the first node (in the file's order) whose
/// value ends in '*' and is a prefix of the entry's value, else the node for the key alone (any value).
/// No node: no rule. The rule is that of the node the last entry reaches; there is no going back to try
/// another node at an earlier level, so a request matches exactly one path or none.

#include <ratelimit/rule.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// One entry of a request's descriptor, viewed: both strings must outlive the call that takes it.
struct DescriptorEntry {
  std::string_view key;
  std::string_view value;
};

/// The descriptors of one domain. Built level by level (addNode, setRule) by the configuration, then
/// only read: find may be called from any number of threads at once.
class RuleTree {
 public:
  /// The node the domain's own `descriptors` hang from.
  static constexpr std::size_t kRoot = 0;

  RuleTree() : nodes_(1) {}

  /// The rule `descriptor` reaches, or nullptr when it reaches none (an empty descriptor reaches none).
  /// Allocates nothing.
  const Rule* find(const std::vector<DescriptorEntry>& descriptor) const {
    if (descriptor.empty()) return nullptr;
    std::size_t node = kRoot;
    for (const DescriptorEntry& entry : descriptor) {
      const std::optional<std::size_t> next = child(nodes_[node], entry);
      if (!next) return nullptr;
      node = *next;
    }
    const std::optional<Rule>& rule = nodes_[node].rule;
    return rule ? &*rule : nullptr;
  }

  /// Adds a node under `parent` for `key` and `value` as written (empty: any value; ending in '*': a
  /// prefix) and gives its index, or nothing when `parent` has one for that key and value already.
  std::optional<std::size_t> addNode(std::size_t parent, std::string_view key, std::string_view value) {
    const std::size_t added = nodes_.size();
    // Looked up again after the push: it may move every node.
    nodes_.emplace_back();
    Branch& branch = nodes_[parent].branches[std::string(key)];
    bool fresh = false;
    if (value.empty()) {
      fresh = !branch.any_value;
      if (fresh) branch.any_value = added;
    } else if (value.back() == '*') {
      const std::string_view prefix = value.substr(0, value.size() - 1);
      fresh = std::none_of(branch.by_prefix.begin(), branch.by_prefix.end(),
                           [&](const auto& taken) { return taken.first == prefix; });
      if (fresh) branch.by_prefix.emplace_back(prefix, added);
    } else {
      fresh = branch.by_value.emplace(std::string(value), added).second;
    }
    if (!fresh) {
      nodes_.pop_back();
      return std::nullopt;
    }
    return added;
  }

  /// Gives `node` its rule.
  void setRule(std::size_t node, Rule rule) { nodes_[node].rule = std::move(rule); }

  /// How many rules the tree holds.
  std::size_t ruleCount() const {
    return static_cast<std::size_t>(
        std::count_if(nodes_.begin(), nodes_.end(), [](const Node& node) { return node.rule.has_value(); }));
  }

 private:
  // The nodes under one node for one key, by how they take a value.
  struct Branch {
    std::map<std::string, std::size_t, std::less<>> by_value;
    // In the file's order: the first that fits is taken, as envoyproxy/ratelimit does.
    std::vector<std::pair<std::string, std::size_t>> by_prefix;
    std::optional<std::size_t> any_value;
  };
  struct Node {
    std::optional<Rule> rule;
    std::map<std::string, Branch, std::less<>> branches;
  };

  std::optional<std::size_t> child(const Node& node, const DescriptorEntry& entry) const {
    const auto branch = node.branches.find(entry.key);
    if (branch == node.branches.end()) return std::nullopt;
    const Branch& under_key = branch->second;
    if (const auto exact = under_key.by_value.find(entry.value); exact != under_key.by_value.end()) {
      return exact->second;
    }
    for (const auto& [prefix, index] : under_key.by_prefix) {
      if (entry.value.substr(0, prefix.size()) == prefix) return index;
    }
    return under_key.any_value;
  }

  // Indices rather than pointers between nodes: the vector moves them while the tree is built.
  std::vector<Node> nodes_;
};

}  // namespace swl::ratelimit
