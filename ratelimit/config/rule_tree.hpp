#pragma once
/// \file
/// The descriptors of one domain as a tree, and the rule a request's descriptor reaches in it, as
/// envoyproxy/ratelimit finds it. A descriptor's entries are walked one level each: at every level the
/// node for the entry's key and exact value is taken, else the first node (in the file's order) for the
/// key whose value is a pattern the entry's value fits (matchesPattern), else the node for the key alone
/// (any value). No node: no rule. The rule is that of the node the last entry reaches; there is no going
/// back to try another node at an earlier level, so a request matches exactly one path or none.
///
/// Keys and values are matched apart, where envoyproxy/ratelimit matches the text `key_value`: a node
/// for the key `a_b` is not reached by the entry (a, b), nor the pattern `b*` of the key `a` by (a_b, c).

#include <ratelimit/config/rule.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// One entry of a request's descriptor, viewed: both strings must outlive the call that takes it.
struct DescriptorEntry {
  std::string_view key;
  std::string_view value;
};

/// Whether `value` fits `pattern`, each '*' of which stands for any run of characters, none included:
/// the text before the first '*' must begin the value, the text after the last end it, and the pieces
/// between come in that order in what is left, each where it is first found (which is exact for
/// '*'-only patterns). A pattern without '*' fits its own text only. Allocates nothing.
inline bool matchesPattern(std::string_view pattern, std::string_view value) noexcept {
  const std::size_t first_star = pattern.find('*');
  if (first_star == std::string_view::npos) return pattern == value;
  const std::size_t last_star = pattern.rfind('*');
  const std::string_view head = pattern.substr(0, first_star);
  const std::string_view tail = pattern.substr(last_star + 1);
  if (value.size() < head.size() + tail.size() || value.substr(0, head.size()) != head ||
      value.substr(value.size() - tail.size()) != tail) {
    return false;
  }
  std::string_view rest = value.substr(head.size(), value.size() - head.size() - tail.size());
  std::string_view pieces = pattern.substr(first_star + 1, last_star - first_star);
  while (!pieces.empty()) {
    const std::size_t star = pieces.find('*');
    const std::string_view piece = pieces.substr(0, star);
    if (!piece.empty()) {
      const std::size_t found = rest.find(piece);
      if (found == std::string_view::npos) return false;
      rest.remove_prefix(found + piece.size());
    }
    if (star == std::string_view::npos) break;
    pieces.remove_prefix(star + 1);
  }
  return true;
}

/// The descriptors of one domain. Made node by node (addNode, setRule) by the configuration, then
/// arranged once (arrange, or merge); after that only read: find may be called from any number of
/// threads at once.
///
/// Its size is that of its rules and little more: a node is 40 bytes, its key and value are kept once,
/// in one text for the whole tree, and each node's children are one run of a shared index, sorted so
/// that a level is two binary searches and a look at the patterns of the entry's key.
class RuleTree {
 public:
  /// The node the domain's own `descriptors` hang from.
  static constexpr std::uint32_t kRoot = 0;
  /// No node, or no rule.
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

  RuleTree() : nodes_(1) {}

  /// The rule `descriptor` reaches, or nullptr when it reaches none (an empty descriptor reaches none).
  /// Allocates nothing.
  const Rule* find(const std::vector<DescriptorEntry>& descriptor) const noexcept {
    if (descriptor.empty()) return nullptr;
    std::uint32_t node = kRoot;
    for (const DescriptorEntry& entry : descriptor) {
      node = child(nodes_[node], entry);
      if (node == kNone) return nullptr;
    }
    const std::uint32_t rule = nodes_[node].rule;
    return rule == kNone ? nullptr : &rules_[rule];
  }

  /// How many rules the tree holds.
  std::size_t ruleCount() const noexcept { return rule_count_; }

  /// Adds a node under `parent` for `key` and `value` as written (empty: any value; holding '*': a
  /// pattern), from `line` of `file`, and gives its index. Nodes are to be added in the file's order,
  /// which is the order patterns are tried in; siblings are compared by arrange.
  std::uint32_t addNode(std::uint32_t parent, std::string_view key, std::string_view value, const std::string& file,
                        int line) {
    Node node;
    node.parent = parent;
    node.key_at = static_cast<std::uint32_t>(text_.size());
    node.key_size = static_cast<std::uint32_t>(key.size());
    text_.append(key);
    node.value_at = static_cast<std::uint32_t>(text_.size());
    node.value_size = static_cast<std::uint32_t>(value.size());
    text_.append(value);
    node.kind = value.empty()                               ? Kind::key_only
                : value.find('*') != std::string_view::npos ? Kind::pattern
                                                            : Kind::exact;
    node.line = static_cast<std::uint32_t>(line);
    if (files_.empty() || files_.back() != file) files_.push_back(file);
    node.file = static_cast<std::uint16_t>(files_.size() - 1);
    nodes_.push_back(node);
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }

  /// Keeps `rule` for a node to come (setRule), and gives its number: rules are made as a file is read,
  /// nodes once it has been, and a rule is moved only once.
  std::uint32_t keepRule(Rule rule) {
    rules_.push_back(std::move(rule));
    return static_cast<std::uint32_t>(rules_.size() - 1);
  }

  /// Gives `node` the rule kept as number `rule`, and that rule, to be completed.
  Rule& setRule(std::uint32_t node, std::uint32_t rule) {
    if (nodes_[node].rule == kNone) ++rule_count_;
    nodes_[node].rule = rule;
    return rules_[rule];
  }

  /// Makes room for `nodes` more nodes, whose keys and values take `text` bytes.
  void reserve(std::size_t nodes, std::size_t text) {
    nodes_.reserve(nodes_.size() + nodes);
    text_.reserve(text_.size() + text);
  }

  /// Two nodes that envoyproxy/ratelimit would take for one: siblings with the same key and value, or
  /// whose `key_value` texts are the same (the key `a_b` beside the key `a` with the value `b`).
  /// `first` is written before `second`.
  struct Repeat {
    std::uint32_t first;
    std::uint32_t second;
  };

  /// Lays the nodes out for find. Gives the repeat whose second node is written first, if any: a
  /// tree with one is to be thrown away.
  std::optional<Repeat> arrange() {
    text_.shrink_to_fit();
    nodes_.shrink_to_fit();
    children_.assign(nodes_.size() - 1, 0);
    // Children grouped by parent, each group in the order written: a counting sort on the parent.
    std::vector<std::uint32_t> starts(nodes_.size() + 1, 0);
    for (std::size_t node = 1; node < nodes_.size(); ++node) ++starts[nodes_[node].parent + 1];
    for (std::size_t node = 1; node < starts.size(); ++node) starts[node] += starts[node - 1];
    for (std::size_t node = 0; node < nodes_.size(); ++node) {
      nodes_[node].children_at = starts[node];
      nodes_[node].children_count = starts[node + 1] - starts[node];
    }
    for (std::uint32_t node = 1; node < nodes_.size(); ++node) children_[starts[nodes_[node].parent]++] = node;

    std::optional<Repeat> earliest;
    std::vector<std::uint32_t> by_text;
    std::string joined;
    for (Node& parent : nodes_) {
      if (parent.children_count == 0) continue;
      const auto begin = children_.begin() + parent.children_at;
      const auto end = begin + parent.children_count;
      by_text.assign(begin, end);
      std::sort(by_text.begin(), by_text.end(), [&](std::uint32_t a, std::uint32_t b) {
        return std::make_tuple(keyOf(a), valueOf(a), a) < std::make_tuple(keyOf(b), valueOf(b), b);
      });
      for (std::size_t i = 1; i < by_text.size(); ++i) {
        if (keyOf(by_text[i - 1]) == keyOf(by_text[i]) && valueOf(by_text[i - 1]) == valueOf(by_text[i])) {
          keepEarliest(earliest, {by_text[i - 1], by_text[i]});
        }
      }
      std::sort(begin, end, [&](std::uint32_t a, std::uint32_t b) { return before(a, b); });
      findJoinedRepeats(&*begin, &*begin + parent.children_count, joined, earliest);
    }
    return earliest;
  }

  /// Adds `other`'s top level to this tree's (envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG: a later file
  /// of the same domain) and arranges the whole again; gives the first repeat, as arrange does.
  std::optional<Repeat> merge(RuleTree&& other) {
    const auto text_offset = static_cast<std::uint32_t>(text_.size());
    const auto node_offset = static_cast<std::uint32_t>(nodes_.size() - 1);
    const auto rule_offset = static_cast<std::uint32_t>(rules_.size());
    const auto file_offset = static_cast<std::uint16_t>(files_.size());
    text_ += other.text_;
    files_.insert(files_.end(), other.files_.begin(), other.files_.end());
    for (auto& rule : other.rules_) rules_.push_back(std::move(rule));
    rule_count_ += other.rule_count_;
    for (std::size_t node = 1; node < other.nodes_.size(); ++node) {
      Node moved = other.nodes_[node];
      moved.key_at += text_offset;
      moved.value_at += text_offset;
      moved.parent = moved.parent == kRoot ? kRoot : moved.parent + node_offset;
      if (moved.rule != kNone) moved.rule += rule_offset;
      moved.file = static_cast<std::uint16_t>(moved.file + file_offset);
      nodes_.push_back(moved);
    }
    other = RuleTree();
    return arrange();
  }

  /// The key of `node` as written.
  std::string_view keyOf(std::uint32_t node) const noexcept {
    return std::string_view(text_).substr(nodes_[node].key_at, nodes_[node].key_size);
  }
  /// The value of `node` as written: empty for the key alone.
  std::string_view valueOf(std::uint32_t node) const noexcept {
    return std::string_view(text_).substr(nodes_[node].value_at, nodes_[node].value_size);
  }
  /// Where `node` is written.
  SourceLocation locationOf(std::uint32_t node) const {
    return {files_[nodes_[node].file], static_cast<int>(nodes_[node].line)};
  }
  /// envoyproxy/ratelimit's name for `node` below its domain: each level's key, or key_value, joined
  /// by '.' ("to_number.from_number_1").
  std::string pathOf(std::uint32_t node) const {
    std::string path;
    for (std::uint32_t at = node; at != kRoot; at = nodes_[at].parent) {
      std::string level(keyOf(at));
      if (!valueOf(at).empty()) level.append("_").append(valueOf(at));
      path = path.empty() ? level : level + "." + path;
    }
    return path;
  }

 private:
  // Within a key, the node for the key alone comes first, then the patterns in the order written
  // (the first that fits is taken), then the exact values by value, for a binary search.
  enum class Kind : std::uint8_t { key_only, pattern, exact };

  struct Node {
    std::uint32_t key_at = 0;
    std::uint32_t key_size = 0;
    std::uint32_t value_at = 0;
    std::uint32_t value_size = 0;
    std::uint32_t parent = kNone;
    std::uint32_t rule = kNone;
    // A run of children_, filled by arrange.
    std::uint32_t children_at = 0;
    std::uint32_t children_count = 0;
    std::uint32_t line = 0;
    std::uint16_t file = 0;
    Kind kind = Kind::key_only;
  };
  static_assert(sizeof(Node) <= 40, "a node stays small: a large file has as many as it has descriptors");

  bool before(std::uint32_t a, std::uint32_t b) const noexcept {
    if (keyOf(a) != keyOf(b)) return keyOf(a) < keyOf(b);
    if (nodes_[a].kind != nodes_[b].kind) return nodes_[a].kind < nodes_[b].kind;
    if (nodes_[a].kind == Kind::exact) return valueOf(a) < valueOf(b);
    return a < b;
  }

  std::uint32_t child(const Node& node, const DescriptorEntry& entry) const noexcept {
    const std::uint32_t* begin = children_.data() + node.children_at;
    const std::uint32_t* end = begin + node.children_count;
    const std::uint32_t* first =
        std::lower_bound(begin, end, entry.key, [&](std::uint32_t c, std::string_view key) { return keyOf(c) < key; });
    const std::uint32_t* last =
        std::upper_bound(first, end, entry.key, [&](std::string_view key, std::uint32_t c) { return key < keyOf(c); });
    if (first == last) return kNone;
    const std::uint32_t key_only = nodes_[*first].kind == Kind::key_only ? *first : kNone;
    const std::uint32_t* patterns = key_only == kNone ? first : first + 1;
    const std::uint32_t* exact =
        std::partition_point(patterns, last, [&](std::uint32_t c) { return nodes_[c].kind == Kind::pattern; });
    const std::uint32_t* same = std::lower_bound(
        exact, last, entry.value, [&](std::uint32_t c, std::string_view value) { return valueOf(c) < value; });
    if (same != last && valueOf(*same) == entry.value) return *same;
    for (const std::uint32_t* pattern = patterns; pattern != exact; ++pattern) {
      if (matchesPattern(valueOf(*pattern), entry.value)) return *pattern;
    }
    return key_only;
  }

  // envoyproxy/ratelimit keys a level by `key_value`: the key `a_b` (any value) and the key `a` with
  // the value `b` are one to it. For each key with a '_', the shorter key before each '_' is looked up
  // with the rest as its value, among siblings already sorted by `before`.
  void findJoinedRepeats(const std::uint32_t* begin, const std::uint32_t* end, std::string& joined,
                         std::optional<Repeat>& earliest) const {
    for (const std::uint32_t* node = begin; node != end; ++node) {
      const std::string_view key = keyOf(*node);
      for (std::size_t underscore = key.find('_'); underscore != std::string_view::npos;
           underscore = key.find('_', underscore + 1)) {
        joined.assign(key.substr(underscore + 1));
        if (!valueOf(*node).empty()) joined.append("_").append(valueOf(*node));
        if (joined.empty()) continue;  // `a_` alone is not `a` alone
        const std::string_view shorter = key.substr(0, underscore);
        const std::uint32_t* first =
            std::lower_bound(begin, end, shorter, [&](std::uint32_t c, std::string_view k) { return keyOf(c) < k; });
        const std::uint32_t* last =
            std::upper_bound(first, end, shorter, [&](std::string_view k, std::uint32_t c) { return k < keyOf(c); });
        const std::uint32_t* exact =
            std::partition_point(first, last, [&](std::uint32_t c) { return nodes_[c].kind != Kind::exact; });
        const std::uint32_t* same = std::lower_bound(
            exact, last, std::string_view(joined), [&](std::uint32_t c, std::string_view v) { return valueOf(c) < v; });
        if (same != last && valueOf(*same) == joined) keepEarliest(earliest, {*same, *node});
        for (const std::uint32_t* pattern = first; pattern != exact; ++pattern) {
          if (valueOf(*pattern) == joined) keepEarliest(earliest, {*pattern, *node});
        }
      }
    }
  }

  void keepEarliest(std::optional<Repeat>& earliest, Repeat found) const {
    const auto order = [&](std::uint32_t node) { return std::make_pair(nodes_[node].file, nodes_[node].line); };
    if (order(found.second) < order(found.first)) std::swap(found.first, found.second);
    if (!earliest || order(found.second) < order(earliest->second)) earliest = found;
  }

  std::vector<Node> nodes_;
  std::vector<std::uint32_t> children_;
  // A deque: it grows without moving what it holds, so a large file never holds its rules twice.
  std::deque<Rule> rules_;
  std::size_t rule_count_ = 0;
  // Every node's key and value, one after another.
  std::string text_;
  std::vector<std::string> files_;
};

}  // namespace swl::ratelimit
