// swl-ratelimit's matching (ratelimit/rules.hpp): which rule a request's descriptor reaches, as
// envoyproxy/ratelimit finds it, checked case by case and against a brute-force search of random files.

#include <ratelimit/config.hpp>
#include <ratelimit/rules.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

using swl::ratelimit::DescriptorEntry;
using swl::ratelimit::Domain;
using swl::ratelimit::Rule;

namespace {

Domain parse(const std::string& yaml) { return swl::ratelimit::parseDomain(yaml, "test.yaml"); }

// The name of the rule `descriptor` reaches, or "none".
std::string reached(const Domain& domain, const std::vector<DescriptorEntry>& descriptor) {
  const Rule* rule = domain.rules.find(descriptor);
  return rule ? rule->name : "none";
}

const char* const kPaths = R"(domain: paths
descriptors:
  - key: path
    rate_limit: {unit: minute, requests_per_unit: 1, name: any_path}
  - key: path
    value: "/api/*"
    rate_limit: {unit: minute, requests_per_unit: 2, name: api}
  - key: path
    value: "/api/v1/*"
    rate_limit: {unit: minute, requests_per_unit: 3, name: api_v1}
  - key: path
    value: /api/health
    rate_limit: {unit: minute, requests_per_unit: 4, name: health}
  - key: path
    value: "*"
    descriptors:
      - key: method
        rate_limit: {unit: minute, requests_per_unit: 5, name: any_method}
  - key: user
    value: admin
    descriptors:
      - key: path
        rate_limit: {unit: minute, requests_per_unit: 6, name: admin_path}
  - key: user
    descriptors:
      - key: path
        value: /login
        rate_limit: {unit: minute, requests_per_unit: 7, name: user_login}
)";

}  // namespace

TEST_CASE("an exact value is preferred to a wildcard, and a wildcard to the key alone") {
  const Domain domain = parse(kPaths);
  CHECK(reached(domain, {{"path", "/api/health"}}) == "health");
  CHECK(reached(domain, {{"path", "/api/users"}}) == "api");
  CHECK(reached(domain, {{"path", "/api/"}}) == "api");
  // "/api/v1/*" fits too, but "/api/*" is written first: the first wildcard that fits is taken, as in
  // envoyproxy/ratelimit.
  CHECK(reached(domain, {{"path", "/api/v1/users"}}) == "api");
  // "*" fits every value, and comes before the key alone; it has no rule of its own.
  CHECK(reached(domain, {{"path", "/other"}}) == "none");
  CHECK(reached(domain, {{"path", "/other"}, {"method", "GET"}}) == "any_method");
  CHECK(reached(domain, {{"path", ""}, {"method", "GET"}}) == "any_method");
}

TEST_CASE("a wildcard matches a prefix of the value, never of the key") {
  const Domain domain = parse(R"(domain: d
descriptors:
  - key: a
    value: "b*"
    rate_limit: {unit: second, requests_per_unit: 1, name: a_b}
  - key: a_b
    rate_limit: {unit: second, requests_per_unit: 1, name: key_a_b}
)");
  CHECK(reached(domain, {{"a", "bc"}}) == "a_b");
  CHECK(reached(domain, {{"a", "cb"}}) == "none");
  CHECK(reached(domain, {{"a_b", "c"}}) == "key_a_b");
  CHECK(reached(domain, {{"a", "b"}}) == "a_b");
}

TEST_CASE("the level's best node is taken and never given up for another") {
  const Domain domain = parse(kPaths);
  CHECK(reached(domain, {{"user", "admin"}, {"path", "/x"}}) == "admin_path");
  // user=admin is taken at the first level, and has no /login below it: the key-only user, which has, is
  // not tried.
  CHECK(reached(domain, {{"user", "admin"}, {"path", "/login"}}) == "admin_path");
  CHECK(reached(domain, {{"user", "bob"}, {"path", "/login"}}) == "user_login");
  CHECK(reached(domain, {{"user", "bob"}, {"path", "/x"}}) == "none");
}

TEST_CASE("a descriptor that stops short, runs past the tree, or names no node reaches no rule") {
  const Domain domain = parse(kPaths);
  CHECK(reached(domain, {}) == "none");
  CHECK(reached(domain, {{"user", "admin"}}) == "none");
  CHECK(reached(domain, {{"path", "/api/health"}, {"method", "GET"}}) == "none");
  CHECK(reached(domain, {{"host", "example.com"}}) == "none");
  CHECK(reached(domain, {{"user", "admin"}, {"path", "/x"}, {"method", "GET"}}) == "none");
}

namespace {

// A random file's descriptors as the generator wrote them, in the file's order.
struct WrittenNode {
  std::string key;
  std::string value;  // as written: empty for the key alone, ending in '*' for a prefix
  std::optional<std::string> rule;
  std::vector<WrittenNode> children;
};

const std::vector<std::string> kKeys{"a", "b", "c"};
const std::vector<std::string> kWrittenValues{"", "x", "y", "xy", "x*", "xy*", "y*", "*"};
const std::vector<std::string> kRequestValues{"", "x", "y", "xy", "xyz", "yx", "z"};

class RandomFiles {
 public:
  explicit RandomFiles(std::uint64_t seed) : random_(seed) {}

  std::vector<WrittenNode> level(int depth) {
    std::vector<std::pair<std::string, std::string>> choices;
    for (const std::string& key : kKeys) {
      for (const std::string& value : kWrittenValues) choices.emplace_back(key, value);
    }
    std::shuffle(choices.begin(), choices.end(), random_);
    const std::size_t count = depth == 0 ? 2 + below(7) : below(depth >= 3 ? 2 : 5);
    std::vector<WrittenNode> nodes;
    for (std::size_t i = 0; i < count; ++i) {
      WrittenNode node{choices[i].first, choices[i].second, std::nullopt, {}};
      if (below(10) < 6) node.rule = "r" + std::to_string(++rules_);
      if (depth < 3) node.children = level(depth + 1);
      nodes.push_back(std::move(node));
    }
    return nodes;
  }

  std::string yaml(const std::vector<WrittenNode>& nodes) {
    std::string text = "domain: random\ndescriptors:\n";
    write(nodes, "  ", text);
    return text;
  }

  // A descriptor that follows the tree for a while (so that deep nodes are reached), then wanders.
  std::vector<std::pair<std::string, std::string>> descriptor(const std::vector<WrittenNode>& tree) {
    std::vector<std::pair<std::string, std::string>> entries;
    const std::vector<WrittenNode>* level = &tree;
    const std::size_t length = 1 + below(4);
    while (entries.size() < length) {
      if (level && !level->empty() && below(10) < 8) {
        const WrittenNode& node = (*level)[below(level->size())];
        entries.emplace_back(node.key, valueFitting(node.value));
        level = &node.children;
      } else {
        entries.emplace_back(below(4) == 0 ? "d" : kKeys[below(kKeys.size())],
                             kRequestValues[below(kRequestValues.size())]);
        level = nullptr;
      }
    }
    return entries;
  }

  std::size_t below(std::size_t bound) { return std::uniform_int_distribution<std::size_t>(0, bound - 1)(random_); }

 private:
  std::string valueFitting(const std::string& written) {
    if (written.empty()) return kRequestValues[below(kRequestValues.size())];
    if (written.back() == '*') return written.substr(0, written.size() - 1) + (below(2) ? "" : "z");
    return written;
  }

  void write(const std::vector<WrittenNode>& nodes, const std::string& indent, std::string& text) {
    for (const WrittenNode& node : nodes) {
      text += indent + "- key: " + node.key + "\n";
      // The key alone is written both ways envoyproxy/ratelimit takes it.
      if (!node.value.empty() || below(2)) text += indent + "  value: \"" + node.value + "\"\n";
      if (node.rule) {
        text += indent + "  rate_limit: {unit: second, requests_per_unit: 1, name: " + *node.rule + "}\n";
      }
      if (!node.children.empty()) {
        text += indent + "  descriptors:\n";
        write(node.children, indent + "    ", text);
      }
    }
  }

  std::mt19937_64 random_;
  int rules_ = 0;
};

enum class Step { exact, wildcard, key_only };

// What envoyproxy/ratelimit's lookup does, by brute force over the nodes as written: at each level, of
// the nodes under the one chosen so far with the entry's key, the one of the same value, else the first
// wildcard that fits, else the one without a value.
struct Oracle {
  std::optional<std::string> rule;
  std::vector<Step> steps;
  bool reached_no_node = false;
};

Oracle oracle(const std::vector<WrittenNode>& tree, const std::vector<std::pair<std::string, std::string>>& entries) {
  Oracle answer;
  const std::vector<WrittenNode>* level = &tree;
  const WrittenNode* chosen = nullptr;
  for (const auto& [key, value] : entries) {
    const WrittenNode* exact = nullptr;
    const WrittenNode* wildcard = nullptr;
    const WrittenNode* key_only = nullptr;
    for (const WrittenNode& node : *level) {
      if (node.key != key) continue;
      const bool is_wildcard = !node.value.empty() && node.value.back() == '*';
      if (node.value.empty()) {
        key_only = &node;
      } else if (is_wildcard) {
        const std::string prefix = node.value.substr(0, node.value.size() - 1);
        if (!wildcard && value.compare(0, prefix.size(), prefix) == 0 && value.size() >= prefix.size()) {
          wildcard = &node;
        }
      } else if (node.value == value) {
        exact = &node;
      }
    }
    chosen = exact ? exact : wildcard ? wildcard : key_only;
    if (!chosen) {
      answer.reached_no_node = true;
      return answer;
    }
    answer.steps.push_back(exact ? Step::exact : wildcard ? Step::wildcard : Step::key_only);
    level = &chosen->children;
  }
  answer.rule = chosen->rule;
  return answer;
}

}  // namespace

TEST_CASE("the tree finds the rule a brute-force search of random files finds") {
  std::map<std::string, std::size_t> reached_kinds{
      {"exact", 0}, {"wildcard", 0}, {"key only", 0}, {"no node", 0}, {"a node without a rule", 0}, {"depth >= 2", 0}};
  std::size_t lookups = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    INFO("seed " << seed);
    RandomFiles files(seed);
    const std::vector<WrittenNode> tree = files.level(0);
    const std::string yaml = files.yaml(tree);
    INFO(yaml);
    const Domain domain = parse(yaml);
    for (int round = 0; round < 300; ++round) {
      const auto entries = files.descriptor(tree);
      std::vector<DescriptorEntry> descriptor;
      std::string shown;
      for (const auto& [key, value] : entries) {
        descriptor.push_back({key, value});
        shown += "(" + key + ", " + value + ") ";
      }
      INFO("descriptor " << shown);
      const Oracle expected = oracle(tree, entries);
      const Rule* found = domain.rules.find(descriptor);
      REQUIRE((found ? std::optional<std::string>(found->name) : std::nullopt) == expected.rule);
      if (found) REQUIRE(found->path.size() == entries.size());
      ++lookups;

      for (const Step step : expected.steps) {
        ++reached_kinds[step == Step::exact ? "exact" : step == Step::wildcard ? "wildcard" : "key only"];
      }
      if (expected.reached_no_node) ++reached_kinds["no node"];
      if (!expected.reached_no_node && !expected.rule) ++reached_kinds["a node without a rule"];
      if (expected.rule && entries.size() >= 2) ++reached_kinds["depth >= 2"];
    }
  }
  std::cout << "random files: " << lookups << " lookups; levels matched and outcomes:\n";
  for (const auto& [kind, count] : reached_kinds) std::cout << "  " << kind << ": " << count << "\n";
  for (const auto& [kind, count] : reached_kinds) {
    INFO(kind);
    REQUIRE(count > 0);
  }
}
