// swl-ratelimit's matching (ratelimit/config/rule_tree.hpp): which rule a request's descriptor reaches, as
// envoyproxy/ratelimit finds it, checked case by case (its test/config/config_test.go's among them) and
// against a brute-force search of random files; and a pattern's match against a brute-force one. That
// finding allocates nothing: test_ratelimit_rules_allocations.cpp.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/rule_tree.hpp>

#include "support/ratelimit_yaml.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
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
using swl::test::domainOf;

namespace {

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
  const Domain domain = domainOf(kPaths);
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

TEST_CASE("a pattern matches the value, never the key") {
  const Domain domain = domainOf(R"(domain: d
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
  const Domain domain = domainOf(kPaths);
  CHECK(reached(domain, {{"user", "admin"}, {"path", "/x"}}) == "admin_path");
  // user=admin is taken at the first level, and has no /login below it: the key-only user, which has, is
  // not tried.
  CHECK(reached(domain, {{"user", "admin"}, {"path", "/login"}}) == "admin_path");
  CHECK(reached(domain, {{"user", "bob"}, {"path", "/login"}}) == "user_login");
  CHECK(reached(domain, {{"user", "bob"}, {"path", "/x"}}) == "none");
}

TEST_CASE("a descriptor that stops short, runs past the tree, or names no node reaches no rule") {
  const Domain domain = domainOf(kPaths);
  CHECK(reached(domain, {}) == "none");
  CHECK(reached(domain, {{"user", "admin"}}) == "none");
  CHECK(reached(domain, {{"path", "/api/health"}, {"method", "GET"}}) == "none");
  CHECK(reached(domain, {{"host", "example.com"}}) == "none");
  CHECK(reached(domain, {{"user", "admin"}, {"path", "/x"}, {"method", "GET"}}) == "none");
}

namespace {

// Whether `value` fits `pattern`, by trying every way each '*' may end: what matchesPattern must say.
bool fitsByBruteForce(std::string_view pattern, std::string_view value) {
  if (pattern.empty()) return value.empty();
  if (pattern[0] != '*')
    return !value.empty() && value[0] == pattern[0] && fitsByBruteForce(pattern.substr(1), value.substr(1));
  for (std::size_t taken = 0; taken <= value.size(); ++taken) {
    if (fitsByBruteForce(pattern.substr(1), value.substr(taken))) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a pattern's every '*' is any run of characters, as envoyproxy/ratelimit's are") {
  using swl::ratelimit::matchesPattern;
  // config_test.go's cases.
  for (const char* value : {"barab", "bar123b", "barb"}) CHECK(matchesPattern("bar*b", value));
  for (const char* value : {"bara", "xbarb"}) CHECK_FALSE(matchesPattern("bar*b", value));
  for (const char* value : {"foo123bar456baz", "foobarbaz"}) CHECK(matchesPattern("foo*bar*baz", value));
  for (const char* value : {"foo123baz", "bar456baz"}) CHECK_FALSE(matchesPattern("foo*bar*baz", value));
  for (const char* value : {"/api/v1", "/api-beta-v1", "/apiXYZv1"}) CHECK(matchesPattern("/api*v1", value));
  CHECK_FALSE(matchesPattern("/api*v1", "/api/v2"));
  for (const char* value : {"svcAepBrpc", "svcXXXepYYYrpc", "svceprpc"}) CHECK(matchesPattern("svc*ep*rpc", value));
  CHECK_FALSE(matchesPattern("svc*ep*rpc", "svcABCrpc"));
  CHECK(matchesPattern("/api/*/action", "/api/users/action"));
  CHECK(matchesPattern("/api/*/action", "/api//action"));
  CHECK_FALSE(matchesPattern("/api/*/action", "/api/action"));
  CHECK(matchesPattern("*", ""));
  CHECK(matchesPattern("files/*", "files/"));
  CHECK_FALSE(matchesPattern("a*a", "a"));  // the first and last pieces cannot share a character
  CHECK(matchesPattern("exact", "exact"));
  CHECK_FALSE(matchesPattern("exact", "exactly"));

  // Every pattern of up to 6 signs of {a, b, *} against every value of up to 6 of {a, b}.
  std::vector<std::string> patterns{""};
  std::vector<std::string> values{""};
  for (std::size_t length = 0; length < 6; ++length) {
    const std::size_t before = patterns.size();
    for (std::size_t i = 0; i < before; ++i) {
      if (patterns[i].size() != length) continue;
      for (const char sign : {'a', 'b', '*'}) patterns.push_back(patterns[i] + sign);
    }
    const std::size_t values_before = values.size();
    for (std::size_t i = 0; i < values_before; ++i) {
      if (values[i].size() != length) continue;
      for (const char sign : {'a', 'b'}) values.push_back(values[i] + sign);
    }
  }
  std::size_t fits = 0;
  for (const std::string& pattern : patterns) {
    for (const std::string& value : values) {
      INFO("pattern " << pattern << ", value " << value);
      REQUIRE(matchesPattern(pattern, value) == fitsByBruteForce(pattern, value));
      fits += fitsByBruteForce(pattern, value) ? 1 : 0;
    }
  }
  CHECK(fits > 0);
}

TEST_CASE("envoyproxy's wildcard configuration: the pattern's rule, for the values it takes only") {
  const Domain domain = domainOf(R"(domain: test-domain
descriptors:
  - {key: wild, value: "foo*", rate_limit: {unit: minute, requests_per_unit: 20, name: wild}}
  - {key: noWild, value: foo, rate_limit: {unit: minute, requests_per_unit: 20, name: noWild}}
  - {key: noVal, rate_limit: {unit: minute, requests_per_unit: 20, name: noVal}}
  - {key: midWild, value: "bar*b", rate_limit: {unit: minute, requests_per_unit: 20, name: midWild}}
  - {key: multiWild, value: "foo*bar*baz", rate_limit: {unit: minute, requests_per_unit: 10, name: multiWild}}
  - key: nestedWild
    value: val1
    descriptors:
      - {key: wild, value: "goo*", rate_limit: {unit: minute, requests_per_unit: 20, name: nested}}
)");
  CHECK(reached(domain, {{"noVal", "foo1"}}) == "noVal");
  CHECK(reached(domain, {{"noVal", "foo2"}}) == "noVal");
  CHECK(reached(domain, {{"wild", "foo1"}}) == "wild");
  CHECK(reached(domain, {{"wild", "foo2"}}) == "wild");
  CHECK(domain.rules.find({{"wild", "foo1"}})->stats_key == "test-domain.wild_foo*");
  CHECK(reached(domain, {{"nestedWild", "val1"}, {"wild", "goo2"}}) == "nested");
  CHECK(domain.rules.find({{"nestedWild", "val1"}, {"wild", "goo2"}})->stats_key ==
        "test-domain.nestedWild_val1.wild_goo*");
  CHECK(reached(domain, {{"wild", "bar"}}) == "none");
  CHECK(reached(domain, {{"noWild", "foo1"}}) == "none");  // an exact value is no prefix
  for (const char* value : {"barab", "bar123b", "barb"}) CHECK(reached(domain, {{"midWild", value}}) == "midWild");
  for (const char* value : {"bara", "xbarb"}) CHECK(reached(domain, {{"midWild", value}}) == "none");
  CHECK(domain.rules.find({{"midWild", "barb"}})->stats_key == "test-domain.midWild_bar*b");
  for (const char* value : {"foo123bar456baz", "foobarbaz"}) {
    CHECK(reached(domain, {{"multiWild", value}}) == "multiWild");
  }
  for (const char* value : {"foo123baz", "bar456baz"}) CHECK(reached(domain, {{"multiWild", value}}) == "none");
}

TEST_CASE("envoyproxy's share_threshold configuration: patterns in the middle, several per descriptor") {
  const Domain domain = domainOf(R"(domain: test-domain
descriptors:
  - {key: files, value: "files/*", share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 100}}
  - key: nested
    value: parent
    descriptors:
      - {key: files, value: "nested/*", share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 200}}
  - key: files
    value: "top/*"
    share_threshold: true
    descriptors:
      - {key: files, value: "nested/*", share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 300}}
  - key: user
    value: "user/*"
    share_threshold: true
    descriptors:
      - key: resource
        value: "res/*"
        share_threshold: true
        descriptors:
          - {key: action, rate_limit: {unit: minute, requests_per_unit: 150}}
  - {key: multiroute, value: "svc*ep*rpc", share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 50}}
  - key: tenant
    value: "t*prod"
    share_threshold: true
    descriptors:
      - {key: resource, value: "res*v2", share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 60}}
)");
  const auto limitOf = [&](const std::vector<DescriptorEntry>& descriptor) {
    const Rule* rule = domain.rules.find(descriptor);
    return rule ? rule->limit.max_requests : -1;
  };
  for (const char* file : {"files/a.pdf", "files/b.csv", "files/c.txt"}) CHECK(limitOf({{"files", file}}) == 100);
  CHECK(limitOf({{"nested", "parent"}, {"files", "nested/file1.txt"}}) == 200);
  CHECK(limitOf({{"files", "top/file1.txt"}, {"files", "nested/file1.txt"}}) == 300);
  CHECK(domain.rules.find({{"files", "top/file1.txt"}, {"files", "nested/file1.txt"}})->stats_key ==
        "test-domain.files_top/*.files_nested/*");
  CHECK(limitOf({{"user", "user/alice"}, {"resource", "res/file1"}, {"action", "read"}}) == 150);
  for (const char* route : {"svcAepBrpc", "svcXXXepYYYrpc", "svceprpc"}) CHECK(limitOf({{"multiroute", route}}) == 50);
  CHECK(limitOf({{"multiroute", "svcABCrpc"}}) == -1);
  CHECK(limitOf({{"tenant", "t1prod"}, {"resource", "resAv2"}}) == 60);
  CHECK(limitOf({{"tenant", "t99prod"}, {"resource", "resBBBv2"}}) == 60);
  const Rule& shared = *domain.rules.find({{"tenant", "t1prod"}, {"resource", "resAv2"}});
  CHECK(shared.stats_key == "test-domain.tenant_t*prod.resource_res*v2");
  CHECK(shared.path[0].share_threshold);
  CHECK(shared.path[1].share_threshold);
}

namespace {

// A random file's descriptors as the generator wrote them, in the file's order.
struct WrittenNode {
  std::string key;
  std::string value;  // as written: empty for the key alone, holding '*' for a pattern
  std::optional<std::string> rule;
  std::vector<WrittenNode> children;
};

const std::vector<std::string> kKeys{"a", "b", "c"};
const std::vector<std::string> kWrittenValues{"", "x", "y", "xy", "x*", "xy*", "y*", "*", "*y", "x*y", "*x*", "x**z"};
const std::vector<std::string> kRequestValues{"", "x", "y", "xy", "xyz", "yx", "z", "xzy", "xzz"};

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
    std::string value;
    for (const char sign : written) {
      if (sign != '*') {
        value += sign;
      } else {
        value += below(3) == 0 ? "" : below(2) ? "z" : "yx";
      }
    }
    return value;
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
// pattern that fits, else the one without a value.
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
      const bool is_wildcard = node.value.find('*') != std::string::npos;
      if (node.value.empty()) {
        key_only = &node;
      } else if (is_wildcard) {
        if (!wildcard && fitsByBruteForce(node.value, value)) wildcard = &node;
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
    const Domain domain = domainOf(yaml);
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
