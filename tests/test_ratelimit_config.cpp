// swl-ratelimit's configuration (ratelimit/config/): envoyproxy/ratelimit's files load as its Go loader
// loads them, with what swl adds; every file it refuses is refused with the file, the line and what is
// wrong; any text at all is either a domain or a ConfigError. The cases of envoyproxy/ratelimit's
// test/config/config_test.go are here, each file written again in our own words; at the end, the
// loader's parts without I/O alone (config/yaml/scalar.hpp, config/yaml/events.hpp).

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/source.hpp>
#include <ratelimit/config/yaml/events.hpp>
#include <ratelimit/config/yaml/scalar.hpp>

#include "support/ratelimit_yaml.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using swl::ratelimit::Algorithm;
using swl::ratelimit::ConfigError;
using swl::ratelimit::DescriptorEntry;
using swl::ratelimit::Domain;
using swl::ratelimit::Rule;
using swl::ratelimit::Unit;
using swl::test::domainOf;
using namespace std::chrono_literals;

namespace {

const char* const kEnvoyExample = R"(domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500
      name: users_limit
  - key: database
    rate_limit: {unit: second, requests_per_unit: 50}
    shadow_mode: true
  - key: remote_address
    rate_limit: {unlimited: true}
  - key: to_number
    descriptors:
      - key: from_number
        rate_limit: {unit: hour, requests_per_unit: 100}
)";

// What the file is refused with; a file that loads fails the test.
std::string refusalOf(const std::string& yaml) {
  try {
    domainOf(yaml);
  } catch (const ConfigError& refusal) {
    return refusal.what();
  }
  FAIL("the file was taken:\n" << yaml);
  return "";
}

// The refusal of `yaml` names test.yaml, `line` and says `what`.
void checkRefused(const std::string& yaml, int line, const std::string& what) {
  const std::string refusal = refusalOf(yaml);
  INFO(yaml);
  CHECK_THAT(refusal, Catch::StartsWith("test.yaml:" + std::to_string(line) + ": ") && Catch::Contains(what));
}

const Rule& ruleFor(const Domain& domain, const std::vector<DescriptorEntry>& descriptor) {
  const Rule* rule = domain.rules.find(descriptor);
  REQUIRE(rule != nullptr);
  return *rule;
}

// A scratch directory, removed with everything in it.
class ScratchDirectory {
 public:
  ScratchDirectory()
      : path_(std::filesystem::temp_directory_path() /
              ("swl-ratelimit-" + std::to_string(::getpid()) + "-" + std::to_string(++made_))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  std::filesystem::path write(const std::string& name, const std::string& contents) const {
    std::ofstream(path_ / name, std::ios::binary) << contents;
    return path_ / name;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int made_ = 0;
  std::filesystem::path path_;
};

}  // namespace

TEST_CASE("envoyproxy's example loads with each rule where it is written") {
  const Domain domain = domainOf(kEnvoyExample);
  CHECK(domain.name == "mongo_cps");
  CHECK(domain.source.line == 1);
  CHECK(domain.rules.ruleCount() == 4);

  const Rule& users = ruleFor(domain, {{"database", "users"}});
  CHECK(users.name == "users_limit");
  CHECK(users.limit == swl::Limit{500, 1s});
  CHECK(users.unit == Unit::second);
  CHECK(users.algorithm == Algorithm::sliding_window_log);
  CHECK(users.weight == 1);
  CHECK_FALSE(users.unlimited);
  CHECK_FALSE(users.shadow_mode);
  CHECK_FALSE(users.calendar);
  CHECK(users.stats_key == "mongo_cps.database_users");
  CHECK(users.source.file == "test.yaml");
  CHECK(users.source.line == 5);

  const Rule& any_database = ruleFor(domain, {{"database", "orders"}});
  CHECK(any_database.limit == swl::Limit{50, 1s});
  CHECK(any_database.shadow_mode);
  CHECK(any_database.stats_key == "mongo_cps.database");
  CHECK(any_database.source.line == 10);

  const Rule& remote = ruleFor(domain, {{"remote_address", "10.0.0.1"}});
  CHECK(remote.unlimited);
  CHECK(remote.stats_key == "mongo_cps.remote_address");

  const Rule& nested = ruleFor(domain, {{"to_number", "+1555"}, {"from_number", "+1666"}});
  CHECK(nested.limit == swl::Limit{100, 1h});
  CHECK(nested.unit == Unit::hour);
  CHECK(nested.stats_key == "mongo_cps.to_number.from_number");
  REQUIRE(nested.path.size() == 2);
  CHECK(nested.path[0].key == "to_number");
  CHECK(nested.path[0].value.empty());
  CHECK(nested.path[1].key == "from_number");
  CHECK(nested.source.line == 17);
}

TEST_CASE("what swl adds to a rate_limit is read with its defaults") {
  const Domain domain = domainOf(R"(domain: swl
descriptors:
  - key: tenant
    value: big
    rate_limit:
      unit: Month
      requests_per_unit: 100000
      calendar: true
      time_zone: Europe/Berlin
  - key: tenant
    rate_limit: {unit: year, requests_per_unit: 12, calendar: yes}
  - key: api
    rate_limit: {unit: MINUTE, requests_per_unit: 600, algorithm: gcra, weight: 3}
  - key: batch
    rate_limit: {unit: week, requests_per_unit: 7, algorithm: fixed_window}
  - key: plain
    rate_limit: {unit: day, requests_per_unit: 1}
)");
  const Rule& big = ruleFor(domain, {{"tenant", "big"}});
  CHECK(big.calendar);
  CHECK(big.time_zone == "Europe/Berlin");
  CHECK(big.unit == Unit::month);
  CHECK(big.limit == swl::Limit{100000, 24h * 30});
  CHECK(big.algorithm == Algorithm::fixed_window);

  const Rule& other = ruleFor(domain, {{"tenant", "small"}});
  CHECK(other.calendar);
  CHECK(other.time_zone == "UTC");
  CHECK(other.limit == swl::Limit{12, 24h * 365});

  const Rule& api = ruleFor(domain, {{"api", "x"}});
  CHECK(api.algorithm == Algorithm::gcra);
  CHECK(api.weight == 3);
  CHECK(api.limit == swl::Limit{600, 1min});

  const Rule& batch = ruleFor(domain, {{"batch", "x"}});
  CHECK(batch.algorithm == Algorithm::fixed_window);
  CHECK(batch.limit == swl::Limit{7, 24h * 7});
  CHECK_FALSE(batch.calendar);
  CHECK(batch.time_zone.empty());

  CHECK(ruleFor(domain, {{"plain", "x"}}).limit == swl::Limit{1, 24h});
}

TEST_CASE("envoyproxy's other keys load and are kept") {
  const Domain domain = domainOf(R"(domain: kept
descriptors:
  - key: client
    value_to_metric: true
    descriptors:
      - key: path
        value: "/api/*"
        detailed_metric: true
        rate_limit:
          unit: second
          requests_per_unit: 5
          name: api
          replaces:
            - name: global
            - name: per_client
  - key: empty_value
    value: ""
    rate_limit: {unit: second, requests_per_unit: 1}
)");
  const Rule& api = ruleFor(domain, {{"client", "c1"}, {"path", "/api/users"}});
  CHECK(api.detailed_metric);
  CHECK(api.replaces == std::vector<std::string>{"global", "per_client"});
  REQUIRE(api.path.size() == 2);
  CHECK(api.path[0].value_to_metric);
  CHECK_FALSE(api.path[1].value_to_metric);
  CHECK(api.path[1].value == "/api/*");
  CHECK(api.stats_key == "kept.client.path_/api/*");
  // An empty value is the key alone, as in envoyproxy/ratelimit.
  CHECK(ruleFor(domain, {{"empty_value", "anything"}}).stats_key == "kept.empty_value");
}

TEST_CASE("a domain with no descriptors loads and limits nothing") {
  const Domain domain = domainOf("domain: quiet\n");
  CHECK(domain.rules.ruleCount() == 0);
  CHECK(domain.rules.find({{"a", "b"}}) == nullptr);
  CHECK(domainOf("domain: quiet\ndescriptors:\n").rules.ruleCount() == 0);
}

TEST_CASE("a rate_limit wrong in its numbers is refused at its line") {
  const std::string head = "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n";
  checkRefused(head + "      requests_per_unit: -5\n", 6, "requests_per_unit -5 is negative");
  checkRefused(head + "      requests_per_unit: 1.5\n", 6,
               "requests_per_unit is the number 1.5, a number that is not whole");
  checkRefused(head + "      requests_per_unit: lots\n", 6,
               "requests_per_unit is a whole number, not the text \"lots\"");
  checkRefused(head + "      requests_per_unit: \"5\"\n", 6, "not the text \"5\": write it without quotes");
  checkRefused(head + "      requests_per_unit: 1e3\n", 6, "not whole");
  checkRefused(head + "      requests_per_unit: 4294967296\n", 6,
               "requests_per_unit 4294967296 is above 4294967295, the most Envoy's API holds");
  checkRefused(head + "      requests_per_unit: 9223372036854775808\n", 6, "is above 4294967295");
  checkRefused(head + "      requests_per_unit: 99999999999999999999999\n", 6,
               "not a whole number from 0 to 4294967295");
  checkRefused(head + "      requests_per_unit: [1]\n", 6, "requests_per_unit is a single word or number, not a list");
  checkRefused(head + "      requests_per_unit: true\n", 6, "requests_per_unit is a whole number, not true");
  checkRefused(head + "      requests_per_unit: 10\n      weight: 0\n", 7, "weight is 0");
  checkRefused(head + "      requests_per_unit: 10\n      weight: 11\n", 7, "weight 11 is above requests_per_unit 10");
  checkRefused(head + "      requests_per_unit: 10\n      weight: -1\n", 7, "weight -1 is negative");
}

TEST_CASE("a rate_limit without its unit is refused at its line, and one without its count refuses every hit") {
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 5}\n", 4,
               "rate_limit has no unit");
  // envoyproxy/ratelimit: `rate_limit: {}` is there, with the unit '', which is no unit.
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {}\n", 4, "rate_limit has no unit");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: 5\n", 4, "rate_limit is a map");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: [a]\n", 4, "rate_limit is a map");

  // requests_per_unit left out is 0, as in envoyproxy/ratelimit: every hit is over the limit.
  const Domain none_given = domainOf("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n");
  CHECK(ruleFor(none_given, {{"k", "v"}}).limit == swl::Limit{0, 1s});
  const Domain zero = domainOf(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 0, algorithm: gcra, "
      "weight: 7}\n");
  CHECK(ruleFor(zero, {{"k", "v"}}).limit == swl::Limit{0, 1h});
  CHECK(ruleFor(zero, {{"k", "v"}}).weight == 7);
  // `rate_limit:` with nothing is no rate limit: the descriptor is matched, and limits nothing.
  const Domain null_limit =
      domainOf("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n  - key: j\n    rate_limit: ~\n");
  CHECK(null_limit.rules.ruleCount() == 0);
}

TEST_CASE("requests_per_unit is read as yaml.v2 reads an integer, up to Envoy's 4294967295") {
  const auto limitOf = [](const std::string& written) {
    const Domain domain = domainOf(
        "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: " + written + "}\n");
    return ruleFor(domain, {{"k", "v"}}).limit.max_requests;
  };
  CHECK(limitOf("4294967295") == 4294967295);
  CHECK(limitOf("0x10") == 16);
  CHECK(limitOf("0o20") == 16);
  CHECK(limitOf("020") == 16);  // YAML 1.1's octal
  CHECK(limitOf("0b10000") == 16);
  CHECK(limitOf("1_6") == 16);
  CHECK(limitOf("+16") == 16);
  CHECK(limitOf("~") == 0);
}

TEST_CASE("an unknown unit is refused at its line, naming the units") {
  checkRefused(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 5\n      unit: fortnight\n", 6,
      "unknown unit \"fortnight\" (second, minute, hour, day, week, month or year)");
}

TEST_CASE("a misspelt key is refused at its line, naming the keys that exist there") {
  checkRefused(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n"
      "      requests_per_units: 5\n",
      6, "unknown key \"requests_per_units\" in a rate_limit (unit, requests_per_unit, unlimited");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    shadowmode: true\n", 4,
               "unknown key \"shadowmode\" in a descriptor");
  checkRefused("domian: d\n", 1, "unknown key \"domian\" in the file (domain, descriptors)");
  checkRefused(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1,"
      " replaces: [{nmae: x}]}\n",
      4, "unknown key \"nmae\" in a replaces entry");
  checkRefused("domain: d\n[a]: b\n", 2, "has a key that is not a word");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    weight: 2\n", 4,
               "unknown key \"weight\" in a descriptor: swl's weight is read in a rate_limit only");
}

TEST_CASE("two siblings with one key and value are refused at the second") {
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n", 5,
               "a second descriptor d.k_v");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n  - key: j\n  - key: k\n", 5, "a second descriptor d.k");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n  - key: k\n    value: \"\"\n", 4, "a second descriptor d.k");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: \"a*\"\n  - key: k\n    value: \"a*\"\n", 5,
               "a second descriptor d.k_a*");
  checkRefused(
      "domain: d\ndescriptors:\n  - key: k\n    descriptors:\n      - key: n\n      - {key: n, value: x}\n"
      "      - key: n\n",
      7, "a second descriptor d.k.n");
  // One key under two parents, or one key with two values, is no repeat.
  const Domain fine = domainOf(
      "domain: d\ndescriptors:\n  - key: k\n    descriptors: [{key: n}]\n  - key: j\n    descriptors: [{key: n}]\n"
      "  - {key: k, value: v}\n  - {key: k, value: w}\n  - {key: k, value: \"v*\"}\n");
  CHECK(fine.name == "d");
}

TEST_CASE("unlimited with a unit, or with what swl counts, is refused at that key, and with anything else it loads") {
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      unlimited: true\n", 5,
               "unlimited: true takes no unit");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: DAY}\n", 4,
               "unlimited: true takes no unit");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, weight: 2}\n", 4,
               "unlimited: true takes no algorithm, calendar, time_zone or weight");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, algorithm: gcra}\n", 4,
               "unlimited: true takes no algorithm");
  // envoyproxy/ratelimit ignores requests_per_unit, and a unit that is none, beside unlimited: true.
  const Domain ignored = domainOf(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      requests_per_unit: 5\n"
      "  - key: j\n    rate_limit: {unlimited: true, unit: fortnight}\n");
  CHECK(ruleFor(ignored, {{"k", "v"}}).unlimited);
  CHECK(ruleFor(ignored, {{"j", "v"}}).unlimited);
  CHECK(ignored.warnings.size() == 2);
  // unlimited: false is a limit like any other.
  CHECK(domainOf("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: false, unit: hour, "
                 "requests_per_unit: 1}\n")
            .rules.ruleCount() == 1);
}

TEST_CASE("an algorithm or a calendar that cannot keep the limit is refused at its line") {
  const std::string head = "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n";
  checkRefused(head + "      unit: year\n      requests_per_unit: 286\n      algorithm: gcra\n", 7,
               "too fine to count exactly");
  CHECK(domainOf(head + "      unit: year\n      requests_per_unit: 285\n      algorithm: gcra\n").rules.ruleCount() ==
        1);
  checkRefused(head + "      unit: day\n      requests_per_unit: 5\n      calendar: true\n      algorithm: gcra\n", 8,
               "calendar periods are counted as fixed windows: algorithm gcra cannot keep them");
  checkRefused(head +
                   "      unit: day\n      requests_per_unit: 5\n      calendar: true\n"
                   "      algorithm: sliding_window_log\n",
               8, "algorithm sliding_window_log cannot keep them");
  checkRefused(head + "      unit: hour\n      requests_per_unit: 5\n      calendar: true\n", 7,
               "calendar periods are days, weeks, months or years, and hour is none of them");
  checkRefused(head + "      unit: day\n      requests_per_unit: 5\n      time_zone: Europe/Berlin\n", 7,
               "time_zone is only for calendar: true");
  checkRefused(head + "      unit: day\n      requests_per_unit: 5\n      calendar: true\n      time_zone: \"\"\n", 8,
               "time_zone is empty");
  checkRefused(head + "      unit: day\n      requests_per_unit: 5\n      algorithm: leaky_bucket\n", 7,
               "unknown algorithm \"leaky_bucket\" (sliding_window_log, gcra or fixed_window)");
}

TEST_CASE("a file without its domain, or not shaped as one, is refused at its line") {
  checkRefused("descriptors:\n  - key: k\n", 1, "no domain");
  checkRefused("domain: \"\"\n", 1, "the domain is empty");
  checkRefused("domain:\n", 1, "the domain is empty");
  checkRefused("domain: [a, b]\n", 1, "domain is a single word or number");
  checkRefused("", 1, "the file is empty");
  checkRefused("# a comment and nothing else\n", 1, "the file is empty");
  checkRefused("- domain: d\n", 1, "a file is a map of domain and descriptors");
  checkRefused("just words\n", 1, "the file is the text \"just words\", not a map of domain and descriptors");
  checkRefused("domain: d\ndescriptors: {key: k}\n", 2, "descriptors is a list");
  checkRefused("domain: d\ndescriptors:\n  - just a word\n", 3,
               "descriptors holds the text \"just a word\", which is not a descriptor (a map)");
  checkRefused("domain: d\ndescriptors:\n  - value: v\n", 3, "a descriptor has no key");
  checkRefused("domain: d\ndescriptors:\n  - key: \"\"\n", 3, "a descriptor has no key, or an empty one");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n", 4, "shadow_mode is true or false");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    shadow_mode: \"true\"\n", 4,
               "shadow_mode is true or false, not the text \"true\"");
  checkRefused(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1,"
      " replaces: [{name: \"\"}]}\n",
      4, "a replaces entry has no name, or an empty one");
  checkRefused(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, name: a,"
      " replaces: [{name: a}]}\n",
      4, "a rate_limit cannot replace itself");
}

TEST_CASE("a YAML syntax error is refused at the line the parser found it, in yaml.v2's words") {
  // libyaml's words, which yaml.v2 (a port of it) gives too; where the broken node starts, after them.
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    descriptors: [{key: a}, {key: b}\n", 5,
               "not valid YAML: did not find expected ',' or ']' (while parsing a flow sequence started at line 4)");
  checkRefused("domain: d\ndescriptors:\n  - key: \"quoted\" and not\n", 3,
               "not valid YAML: did not find expected key");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: x\n   - key: j\n", 5,
               "not valid YAML: did not find expected '-' indicator");
  checkRefused("domain: d\n  bad indentation: x\n", 2,
               "not valid YAML: mapping values are not allowed in this context");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: \"open\n", 4,
               "not valid YAML: a quoted text starts here and is never closed");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: @x\n", 4,
               "not valid YAML: found character that cannot start any token");
  checkRefused("domain: d\ndescriptors: *nowhere\n", 2,
               "not valid YAML: the alias *nowhere names no anchor (&nowhere) written before it");
  // What follows the first document is not read, and so not refused.
  const Domain first = domainOf("domain: d\n---\n[unclosed\n");
  REQUIRE(first.warnings.size() == 1);
  CHECK_THAT(first.warnings[0], Catch::StartsWith("test.yaml:2: a second YAML document: ignored"));
}

TEST_CASE("YAML aliases that nest forever or double at each level are refused") {
  checkRefused("domain: d\ndescriptors: &loop\n  - key: k\n    descriptors: *loop\n", 4,
               "the alias *loop is inside the node it names: it would nest forever");
  // Each holder's list names the one before it twice: 2^40 descriptors unless counted.
  std::string nested = "domain: d\ndescriptors:\n  - key: leaf0\n    descriptors: &l0 [{key: leaf}]\n";
  for (int level = 1; level <= 40; ++level) {
    nested += "  - key: holder" + std::to_string(level) + "\n    descriptors: &l" + std::to_string(level) +
              "\n      - {key: a, descriptors: *l" + std::to_string(level - 1) + "}\n      - {key: b, descriptors: *l" +
              std::to_string(level - 1) + "}\n";
  }
  CHECK_THAT(refusalOf(nested), Catch::Contains("YAML aliases here replay more than 4000000 nodes"));
}

TEST_CASE("any text is either a domain or a ConfigError") {
  // The example, bent at random places: bytes changed, dropped, repeated, or YAML's own signs put in.
  const std::string example = kEnvoyExample;
  const std::string signs = ":-{}[],&*!|>'\"%@`#\n\t ?\\0x\xff";
  std::mt19937_64 random(7);
  std::size_t loaded = 0;
  std::size_t refused = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string text = example;
    const int changes = 1 + static_cast<int>(random() % 4);
    for (int change = 0; change < changes && !text.empty(); ++change) {
      const std::size_t at = random() % text.size();
      const char sign = signs[random() % signs.size()];
      switch (random() % 4) {
        case 0:
          text[at] = sign;
          break;
        case 1:
          text.erase(at, 1 + random() % 8);
          break;
        case 2:
          text.insert(at, text.substr(at, random() % 40));
          break;
        default:
          text.insert(at, 1, sign);
      }
    }
    if (round % 10 == 0) {
      text.resize(random() % 200);
      for (char& byte : text) byte = static_cast<char>(random());
    }
    INFO("round " << round << ":\n" << text);
    try {
      domainOf(text);
      ++loaded;
    } catch (const ConfigError& refusal) {
      CHECK_THAT(refusal.what(), Catch::StartsWith("test.yaml:"));
      ++refused;
    }
  }
  std::cout << "bent files: " << loaded << " loaded, " << refused << " refused\n";
  CHECK(loaded > 0);
  CHECK(refused > 0);
}

TEST_CASE("a directory's yaml and yml files are its domains, in their names' order") {
  ScratchDirectory directory;
  directory.write("b.yml",
                  "domain: second\ndescriptors:\n  - {key: k, rate_limit: {unit: minute, requests_per_unit: 2}}\n");
  directory.write("a.yaml",
                  "domain: first\ndescriptors:\n  - {key: k, rate_limit: {unit: second, requests_per_unit: 1}}\n");
  // Not read: not YAML by name, or hidden (Kubernetes keeps its own files so), or not a file.
  directory.write("notes.txt", "not: [yaml");
  directory.write(".hidden.yaml", "not: [yaml");
  std::filesystem::create_directory(directory.path() / "nested.yaml");

  const swl::ratelimit::Configuration configuration = swl::ratelimit::loadConfiguration(directory.path());
  REQUIRE(configuration.domains().size() == 2);
  const Rule* first = configuration.find("first", {{"k", "v"}});
  REQUIRE(first != nullptr);
  CHECK(first->limit == swl::Limit{1, 1s});
  CHECK(first->source.file == (directory.path() / "a.yaml").string());
  CHECK(first->stats_key == "first.k");
  const Rule* second = configuration.find("second", {{"k", "v"}});
  REQUIRE(second != nullptr);
  CHECK(second->limit == swl::Limit{2, 1min});
  CHECK(configuration.find("third", {{"k", "v"}}) == nullptr);

  const swl::ratelimit::Configuration one_file = swl::ratelimit::loadConfiguration(directory.path() / "b.yml");
  CHECK(one_file.domains().size() == 1);
  CHECK(one_file.find("second", {{"k", "v"}}) != nullptr);
}

TEST_CASE("a domain defined twice is refused, naming both files") {
  ScratchDirectory directory;
  const auto first = directory.write("a.yaml", "domain: shared\n");
  const auto second = directory.write("b.yaml", "# the same again\ndomain: shared\n");
  CHECK_THROWS_WITH(
      swl::ratelimit::loadConfiguration(directory.path()),
      Catch::StartsWith(second.string() + ":2: domain \"shared\" is defined already, at " + first.string() + ":1"));
}

TEST_CASE("a directory's bad file is refused with its name and line") {
  ScratchDirectory directory;
  directory.write("a.yaml", "domain: fine\n");
  const auto bad = directory.write("b.yaml", "domain: bad\ndescriptors:\n  - key: k\n    rate_limit: {unit: eon}\n");
  CHECK_THROWS_WITH(swl::ratelimit::loadConfiguration(directory.path()),
                    Catch::StartsWith(bad.string() + ":4: unknown unit \"eon\""));
}

TEST_CASE("a path that holds no configuration is refused") {
  ScratchDirectory directory;
  CHECK_THROWS_WITH(swl::ratelimit::loadConfiguration(directory.path()),
                    Catch::Contains("no *.yaml or *.yml file in this directory"));
  CHECK_THROWS_AS(swl::ratelimit::loadConfiguration(directory.path() / "missing.yaml"), ConfigError);
  // Caught as broadly as any of swl's refusals of what it was given.
  CHECK_THROWS_AS(swl::ratelimit::loadConfiguration(directory.path() / "missing.yaml"), swl::InvalidArgument);
}

TEST_CASE("a lone ',' or an unfinished flow collection is refused at its line") {
  // yaml-cpp 0.7, the parser before libyaml, made empty documents from a lone ',' until memory ran out
  // (jbeder/yaml-cpp#1040).
  CHECK_THAT(refusalOf(","), Catch::StartsWith("test.yaml:1: "));
  CHECK_THAT(refusalOf(" ,"), Catch::StartsWith("test.yaml:1: "));
  CHECK_THAT(refusalOf("domain: d\n,\n"), Catch::StartsWith("test.yaml:"));
  CHECK_THAT(refusalOf("[:"), Catch::StartsWith("test.yaml:1: "));
  CHECK_THAT(refusalOf("{:"), Catch::StartsWith("test.yaml:1: "));
  CHECK_THAT(refusalOf("{# ke\ny{:"), Catch::StartsWith("test.yaml:"));
}

TEST_CASE("the example configuration the swl-ratelimit package ships loads") {
  const swl::ratelimit::Configuration configuration = swl::ratelimit::loadConfiguration(SWL_RATELIMIT_EXAMPLE_CONFIG);
  REQUIRE(configuration.domains().size() == 1);
  const Rule* search = configuration.find("shop", {{"route", "/search"}});
  REQUIRE(search != nullptr);
  CHECK(search->name == "search");
  CHECK(search->limit == swl::Limit{5, 1min});
}

// ------------------------------------------------------------------------------------------------------
// envoyproxy/ratelimit's own cases (test/config/config_test.go), in files written here.

namespace {

// Its basic configuration: nodes with and without limits at two levels, the key alone beside values.
const char* const kBasic = R"(# two levels, limits at each, a node without one
domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - {key: subkey1, rate_limit: {unit: second, requests_per_unit: 5}}
      - {key: subkey1, value: subvalue1, rate_limit: {unit: second, requests_per_unit: 10}}
  - {key: key2, rate_limit: {unit: minute, requests_per_unit: 20}}
  - {key: key2, value: value2, rate_limit: {unit: minute, requests_per_unit: 30}}
  - {key: key2, value: value3}
  - {key: key3, rate_limit: {unit: hour, requests_per_unit: 1}}
  - {key: key4, rate_limit: {name: key4_rate_limit, unit: day, requests_per_unit: 1}}
  - key: key5
    value: value5
    rate_limit: {unit: day, requests_per_unit: 15}
    descriptors:
      - {key: subkey5, value: subvalue5, rate_limit: {unit: day, requests_per_unit: 25}}
  - {key: key6, rate_limit: {unlimited: true}}
  - {key: key7, detailed_metric: true, rate_limit: {unit: minute, requests_per_unit: 70}}
)";

}  // namespace

TEST_CASE("envoyproxy's basic configuration: each descriptor reaches its limit, or none") {
  const Domain domain = domainOf(kBasic);
  CHECK(domain.warnings.empty());
  CHECK(domain.rules.find({}) == nullptr);
  CHECK(domain.rules.find({{"key1", "something"}}) == nullptr);
  CHECK(domain.rules.find({{"key1", "value1"}}) == nullptr);  // a node without a limit
  CHECK(domain.rules.find({{"key2", "value2"}, {"subkey", "subvalue"}}) == nullptr);
  CHECK(domain.rules.find({{"key5", "value5"}, {"subkey5", "subvalue"}}) == nullptr);

  const Rule& any_subkey = ruleFor(domain, {{"key1", "value1"}, {"subkey1", "something"}});
  CHECK(any_subkey.limit == swl::Limit{5, 1s});
  CHECK(any_subkey.stats_key == "test-domain.key1_value1.subkey1");
  const Rule& subvalue = ruleFor(domain, {{"key1", "value1"}, {"subkey1", "subvalue1"}});
  CHECK(subvalue.limit == swl::Limit{10, 1s});
  CHECK(subvalue.stats_key == "test-domain.key1_value1.subkey1_subvalue1");

  CHECK(ruleFor(domain, {{"key2", "something"}}).limit == swl::Limit{20, 1min});
  CHECK(ruleFor(domain, {{"key2", "something"}}).stats_key == "test-domain.key2");
  CHECK(ruleFor(domain, {{"key2", "value2"}}).limit == swl::Limit{30, 1min});
  CHECK(ruleFor(domain, {{"key2", "value2"}}).stats_key == "test-domain.key2_value2");
  CHECK(domain.rules.find({{"key2", "value3"}}) == nullptr);  // allowed by name: no limit

  CHECK(ruleFor(domain, {{"key3", "foo"}}).limit == swl::Limit{1, 1h});
  CHECK(ruleFor(domain, {{"key3", "foo"}}).name.empty());
  CHECK(ruleFor(domain, {{"key4", "foo"}}).limit == swl::Limit{1, 24h});
  CHECK(ruleFor(domain, {{"key4", "foo"}}).name == "key4_rate_limit");
  CHECK(ruleFor(domain, {{"key6", "foo"}}).unlimited);
  CHECK(ruleFor(domain, {{"key6", "foo"}}).stats_key == "test-domain.key6");
  CHECK(ruleFor(domain, {{"key7", "unspecified_value"}}).detailed_metric);
  CHECK(ruleFor(domain, {{"key7", "unspecified_value"}}).limit == swl::Limit{70, 1min});

  swl::ratelimit::Configuration configuration;
  configuration.add(domainOf(kBasic));
  CHECK(configuration.find("foo_domain", {}) == nullptr);
  CHECK(configuration.find("foo_domain", {{"key1", "value1"}, {"subkey1", "something"}}) == nullptr);
}

TEST_CASE("envoyproxy's shadow mode, quota mode and metric flags are read per descriptor") {
  const Domain domain = domainOf(R"(domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - {key: subkey1, rate_limit: {unit: second, requests_per_unit: 5}}
      - {key: subkey1, value: subvalue1, shadow_mode: true, rate_limit: {unit: second, requests_per_unit: 10}}
  - {key: key2, shadow_mode: yes, quota_mode: on, rate_limit: {unit: minute, requests_per_unit: 20}}
  - {key: key2, value: value2, rate_limit: {unit: minute, requests_per_unit: 30}}
  - key: route
    value_to_metric: true
    descriptors:
      - {key: method, value_to_metric: true, detailed_metric: True, rate_limit: {unit: minute, requests_per_unit: 60}}
)");
  CHECK_FALSE(ruleFor(domain, {{"key1", "value1"}, {"subkey1", "something"}}).shadow_mode);
  CHECK(ruleFor(domain, {{"key1", "value1"}, {"subkey1", "subvalue1"}}).shadow_mode);
  const Rule& key2 = ruleFor(domain, {{"key2", "something"}});
  CHECK(key2.shadow_mode);
  CHECK(key2.quota_mode);
  CHECK_FALSE(ruleFor(domain, {{"key2", "value2"}}).shadow_mode);
  CHECK_FALSE(ruleFor(domain, {{"key2", "value2"}}).quota_mode);
  const Rule& method = ruleFor(domain, {{"route", "draw"}, {"method", "GET"}});
  CHECK(method.detailed_metric);
  REQUIRE(method.path.size() == 2);
  CHECK(method.path[0].value_to_metric);
  CHECK(method.path[1].value_to_metric);
  CHECK(method.stats_key == "test-domain.route.method");
}

TEST_CASE("envoyproxy's share_threshold is read on patterns, and refused on a value without '*'") {
  const Domain domain = domainOf(R"(domain: test-domain
descriptors:
  - {key: files, value: "files/*", share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 100}}
  - key: path
    value: "path/*"
    share_threshold: true
    descriptors:
      - key: file
        value: "file/*"
        share_threshold: false
        descriptors:
          - {key: type, rate_limit: {unit: minute, requests_per_unit: 120}}
  - {key: file, value: test1, rate_limit: {unit: minute, requests_per_unit: 50}}
  - {key: file, value: "test*", share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 100}}
  - {key: midpath, value: "/api*v1", share_threshold: true, rate_limit: {unit: minute, requests_per_unit: 100}}
)");
  const Rule& files = ruleFor(domain, {{"files", "files/a.pdf"}});
  CHECK(files.stats_key == "test-domain.files_files/*");
  REQUIRE(files.path.size() == 1);
  CHECK(files.path[0].share_threshold);
  CHECK(files.path[0].isPattern());
  const Rule& type = ruleFor(domain, {{"path", "path/foo"}, {"file", "file/doc1"}, {"type", "pdf"}});
  CHECK(type.limit.max_requests == 120);
  REQUIRE(type.path.size() == 3);
  CHECK(type.path[0].share_threshold);
  CHECK_FALSE(type.path[1].share_threshold);
  CHECK(type.path[1].isPattern());
  CHECK_FALSE(type.path[2].isPattern());
  CHECK(type.stats_key == "test-domain.path_path/*.file_file/*.type");
  // The exact value is taken before the pattern: its counter is its own.
  CHECK(ruleFor(domain, {{"file", "test1"}}).limit.max_requests == 50);
  CHECK_FALSE(ruleFor(domain, {{"file", "test1"}}).path[0].isPattern());
  CHECK(ruleFor(domain, {{"file", "test23"}}).limit.max_requests == 100);
  CHECK(ruleFor(domain, {{"midpath", "/api-beta-v1"}}).stats_key == "test-domain.midpath_/api*v1");
  CHECK(domain.rules.find({{"midpath", "/api/v2"}}) == nullptr);

  checkRefused("domain: d\ndescriptors:\n  - key: files\n    value: files\n    share_threshold: true\n", 3,
               "share_threshold: true needs a pattern, a value with '*', and key \"files\" has the value \"files\"");
  checkRefused("domain: d\ndescriptors:\n  - {key: files, share_threshold: true}\n", 3,
               "and key \"files\" has no value");
  // share_threshold: false asks nothing.
  CHECK(domainOf("domain: d\ndescriptors:\n  - {key: k, value: v, share_threshold: false}\n").name == "d");
}

TEST_CASE("envoyproxy's metadata loads, whatever YAML it holds, and is not read") {
  const Domain domain = domainOf(R"(domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit: {unit: second, requests_per_unit: 5}
        metadata:
          name: service_1
  - key: key2
    rate_limit: {unit: minute, requests_per_unit: 20}
    metadata:
      service_with_quota: {name: service_2, limits: [1, 2.5, {deep: [true, ~, 2024-01-01]}], 1: one}
      "unknown keys": {ratelimit: anything, weight: 1.5}
  - {key: key3, metadata: ~, rate_limit: {unit: hour, requests_per_unit: 1}}
)");
  CHECK(ruleFor(domain, {{"key1", "value1"}, {"subkey1", "something"}}).limit == swl::Limit{5, 1s});
  CHECK(ruleFor(domain, {{"key2", "something"}}).limit == swl::Limit{20, 1min});
  CHECK(ruleFor(domain, {{"key3", "x"}}).limit == swl::Limit{1, 1h});
  CHECK(domain.warnings.empty());
  checkRefused("domain: d\ndescriptors:\n  - {key: k, metadata: [a]}\n", 3, "metadata is a map, not a list");
  checkRefused("domain: d\ndescriptors:\n  - {key: k, metadata: text}\n", 3, "metadata is a map, not the text");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    metadata: {[a]: b}\n", 4, "has a key that is not a word");
  // Text in it that is not UTF-8 is refused, as everywhere in the file.
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    metadata: {name: \"caf\xe9\"}\n", 4,
               "not UTF-8 (the byte 0xe9");
}

TEST_CASE("envoyproxy's refused files are refused, each at its line and naming the problem") {
  checkRefused(
      "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: foo\n"
      "      requests_per_unit: 5\n",
      6, "unknown unit \"foo\"");
  checkRefused("'''\n", 1, "not valid YAML: a quoted text starts here and is never closed");
  checkRefused(
      "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n\n  - key: key1\n    value: value1\n", 6,
      "a second descriptor test-domain.key1_value1, the first at line 3");
  checkRefused("descriptors:\n", 1, "no domain: every file names its domain");
  checkRefused("domain: test-domain\ndescriptors:\n  - value: value1\n", 3, "a descriptor has no key");
  checkRefused("domain: test-domain\ndescriptors:\n  - key: key1\n    ratelimit:\n      unit: day\n", 4,
               "unknown key \"ratelimit\" in a descriptor");
  checkRefused(
      "domain: test-domain\ndescriptors:\n  - key: key1\n    rate_limit:\n      unit: day\n"
      "      requestsperunit: 5\n",
      6, "unknown key \"requestsperunit\" in a rate_limit");
  checkRefused("domain: test-domain\ndescriptors:\n  - a\n  - b\n", 3,
               "descriptors holds the text \"a\", which is not a descriptor (a map)");
  checkRefused("domain: test-domain\ndescriptors:\n  -\n  - key: k\n", 3, "descriptors holds an empty item");
  checkRefused("0.25: test-domain\ndescriptors:\n", 1, "the key 0.25 is read as a number, not a word");
  checkRefused("domain: d\nyes: no\n", 2, "the key yes is read as a boolean, not a word");
  checkRefused("domain: d\n~: x\n", 2, "the key null is read as null");
  const std::string replacing =
      "domain: test-domain\ndescriptors:\n  - key: key1\n    rate_limit:\n      name: self\n"
      "      unit: second\n      replaces:\n";
  checkRefused(replacing + "        - name:\n", 8, "a replaces entry has no name, or an empty one");
  checkRefused(replacing + "        - name: other\n        - name: self\n", 9,
               "a rate_limit cannot replace itself (\"self\")");
  checkRefused(replacing + "        - other\n", 8, "replaces holds the text \"other\", which is not a replaces entry");
  checkRefused(
      "domain: test-domain\ndescriptors:\n  - key: foo\n    rate_limit:\n      unlimited: true\n"
      "      unit: day\n      requests_per_unit: 25\n",
      6, "unlimited: true takes no unit");
  // A name replaces may name that no rule has is fine, as in envoyproxy/ratelimit.
  CHECK(ruleFor(domainOf(replacing + "        - name: nowhere\n"), {{"key1", "x"}}).replaces ==
        std::vector<std::string>{"nowhere"});
}

TEST_CASE("envoyproxy's duplicate domain is refused naming both files, and merged when asked") {
  swl::ratelimit::Configuration configuration;
  configuration.add(swl::ratelimit::parseDomain(kBasic, "basic_config.yaml"));
  CHECK_THROWS_WITH(configuration.add(swl::ratelimit::parseDomain("domain: test-domain\ndescriptors:\n", "dup.yaml")),
                    Catch::StartsWith("dup.yaml:1: domain \"test-domain\" is defined already, at basic_config.yaml:2"));

  const std::string key1 =
      "# first file\ndomain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n"
      "    rate_limit: {unit: minute, requests_per_unit: 10}\n";
  const std::string key2 =
      "domain: test-domain\ndescriptors:\n  - key: key2\n    value: value2\n"
      "    rate_limit: {unit: minute, requests_per_unit: 20}\n";
  swl::ratelimit::Configuration merged;
  merged.add(swl::ratelimit::parseDomain(key1, "key1.yaml"), true);
  merged.add(swl::ratelimit::parseDomain(key2, "key2.yaml"), true);
  REQUIRE(merged.domains().size() == 1);
  CHECK(merged.domains().at("test-domain").rules.ruleCount() == 2);
  CHECK(merged.find("test-domain", {}) == nullptr);
  CHECK(merged.find("foo_domain", {{"key1", "value1"}}) == nullptr);
  REQUIRE(merged.find("test-domain", {{"key1", "value1"}}) != nullptr);
  CHECK(merged.find("test-domain", {{"key1", "value1"}})->limit == swl::Limit{10, 1min});
  CHECK(merged.find("test-domain", {{"key1", "value1"}})->source.file == "key1.yaml");
  REQUIRE(merged.find("test-domain", {{"key2", "value2"}}) != nullptr);
  CHECK(merged.find("test-domain", {{"key2", "value2"}})->limit == swl::Limit{20, 1min});
  CHECK(merged.find("test-domain", {{"key2", "value2"}})->source.file == "key2.yaml");

  // The same descriptor in both files is refused, naming both.
  swl::ratelimit::Configuration twice;
  twice.add(swl::ratelimit::parseDomain(key1, "a.yaml"), true);
  CHECK_THROWS_WITH(twice.add(swl::ratelimit::parseDomain(key1, "b.yaml"), true),
                    Catch::StartsWith("b.yaml:4: a second descriptor test-domain.key1_value1, the first at a.yaml:4"));

  ScratchDirectory directory;
  directory.write("a.yaml", key1);
  directory.write("b.yaml", key2);
  CHECK_THROWS_AS(swl::ratelimit::loadConfiguration(directory.path()), ConfigError);
  CHECK(swl::ratelimit::loadConfiguration(directory.path(), true).domains().at("test-domain").rules.ruleCount() == 2);
}

TEST_CASE("a key where it means nothing is ignored with a warning, as envoyproxy/ratelimit ignores it") {
  const Domain domain = domainOf(R"(domain: d
unit: second
descriptors:
  - key: k
    unit: minute
    name: {requests_per_unit: 5}
    rate_limit:
      requests_per_unit: 5
      unit: second
      key: nothing
      metadata: [anything, 1.5]
)");
  CHECK(ruleFor(domain, {{"k", "v"}}).limit == swl::Limit{5, 1s});
  REQUIRE(domain.warnings.size() == 5);
  CHECK(domain.warnings[0] ==
        "test.yaml:2: unit means nothing in the file (it is read in a rate_limit): ignored, as "
        "envoyproxy/ratelimit ignores it");
  CHECK_THAT(domain.warnings[1], Catch::StartsWith("test.yaml:5: unit means nothing in a descriptor"));
  CHECK_THAT(domain.warnings[2], Catch::StartsWith("test.yaml:6: name means nothing in a descriptor"));
  CHECK_THAT(domain.warnings[3], Catch::StartsWith("test.yaml:10: key means nothing in a rate_limit"));
  CHECK_THAT(domain.warnings[4], Catch::StartsWith("test.yaml:11: metadata means nothing in a rate_limit"));
  // What it holds is still checked as envoyproxy/ratelimit checks every key: its keys are its own.
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    unit: {nmae: x}\n", 4, "unknown key \"nmae\"");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    name: [a]\n", 4, "a list here holds the text \"a\"");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    unit: 1.5\n", 4, "unit is the number 1.5");
}

TEST_CASE("a key given twice is read from its last value, with a warning, as envoyproxy/ratelimit reads it") {
  const Domain domain = domainOf(R"(domain: first
domain: second
descriptors:
  - key: k
    key: j
    rate_limit: {unit: second, requests_per_unit: 1}
)");
  CHECK(domain.name == "second");
  CHECK(ruleFor(domain, {{"j", "v"}}).limit == swl::Limit{1, 1s});
  CHECK(domain.rules.find({{"k", "v"}}) == nullptr);
  REQUIRE(domain.warnings.size() == 2);
  CHECK(domain.warnings[0] ==
        "test.yaml:2: domain is given again in the file (first at line 1): the last is read, as envoyproxy/ratelimit "
        "reads it");
  CHECK_THAT(domain.warnings[1],
             Catch::StartsWith("test.yaml:5: key is given again in a descriptor (first at line 4)"));

  // A second rate_limit adds to the first, field by field, as yaml.v2 decodes them into one.
  const Domain twice = domainOf(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, name: a}\n    rate_limit: {requests_per_unit: "
      "3}\n");
  const Rule& added = ruleFor(twice, {{"k", "v"}});
  CHECK(added.limit == swl::Limit{3, 1h});
  CHECK(added.name == "a");
  // A second descriptors list takes the place of the first.
  const Domain replaced = domainOf(
      "domain: d\ndescriptors:\n  - {key: a, rate_limit: {unit: hour, requests_per_unit: 1}}\n"
      "descriptors:\n  - {key: b, rate_limit: {unit: hour, requests_per_unit: 1}}\n");
  CHECK(replaced.rules.ruleCount() == 1);
  CHECK(replaced.rules.find({{"a", "x"}}) == nullptr);
  // What the first value said wrong goes with it; a value that could not be decoded at all does not.
  CHECK(domainOf("domain: d\ndescriptors:\n  - {key: k, nmae: x}\ndescriptors:\n  - {key: k}\n").warnings.size() == 1);
  checkRefused("domain: d\ndescriptors:\n  - {key: k, shadow_mode: maybe}\ndescriptors:\n  - {key: k}\n", 3,
               "shadow_mode is true or false");
}

TEST_CASE("YAML 1.1 is read as yaml.v2 reads it: words, numbers, aliases, merge keys, the first document") {
  const Domain domain = domainOf(R"(domain: d
descriptors:
  - key: 123
    value: yes
    rate_limit: &limit {unit: Minute, requests_per_unit: 5}
  - key: shared
    rate_limit: *limit
  - key: merged
    rate_limit:
      <<: *limit
      requests_per_unit: 7
  - key: several
    rate_limit:
      <<: [{unit: day, name: first}, {unit: hour, name: second, requests_per_unit: 9}]
---
this: is not read
)");
  CHECK(ruleFor(domain, {{"123", "yes"}}).limit == swl::Limit{5, 1min});
  CHECK(ruleFor(domain, {{"shared", "x"}}).limit == swl::Limit{5, 1min});
  CHECK(ruleFor(domain, {{"merged", "x"}}).limit == swl::Limit{7, 1min});
  // Of a list of maps merged, the first's keys are kept.
  CHECK(ruleFor(domain, {{"several", "x"}}).limit == swl::Limit{9, 24h});
  CHECK(ruleFor(domain, {{"several", "x"}}).name == "first");
  REQUIRE(domain.warnings.size() == 1);
  CHECK_THAT(domain.warnings[0], Catch::StartsWith("test.yaml:15: a second YAML document: ignored"));
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: 1.5\n", 4,
               "value is the number 1.5, a number that is not whole, which envoyproxy/ratelimit refuses: quote it");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: 18446744073709551615\n", 4, "past the int64");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    <<: 5\n", 4, "<< merges a map, an alias of one, or a list");
  checkRefused("domain: d\nx: &l [a]\n", 2, "unknown key \"x\"");
  // Quoted, a number is text.
  CHECK(ruleFor(domainOf("domain: d\ndescriptors:\n  - {key: k, value: \"1.5\", rate_limit: {unit: hour}}\n"),
                {{"k", "1.5"}})
            .limit.max_requests == 0);
}

TEST_CASE("a file that is not UTF-8, or holds a character YAML does not allow, is refused at its line") {
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: \"\xff\"\n", 4,
               "not UTF-8 (the byte 0xff): envoyproxy/ratelimit reads UTF-8 only");
  checkRefused("domain: d\ndescriptors:\n  - key: \xc3\n", 3,
               "not UTF-8 (the byte 0xc3 starts a character that is not finished)");
  checkRefused("domain: d\n# \xed\xa0\x80 a surrogate\n", 2, "an encoding UTF-8 forbids");
  checkRefused(std::string("domain: d\ndescriptors:\n  - key: a\x01\n"), 3,
               "the character U+1, which YAML does not allow");
  checkRefused(std::string("domain: d\0\n", 11), 1, "the character U+0");
  // UTF-8 in any language loads; so does UTF-16 with its byte order mark, as in envoyproxy/ratelimit.
  CHECK(ruleFor(domainOf("domain: d\ndescriptors:\n  - {key: ville, value: Zürich, rate_limit: {unit: hour}}\n"),
                {{"ville", "Zürich"}})
            .stats_key == "d.ville_Zürich");
  std::string utf16 = "\xff\xfe";
  for (const char c : std::string("domain: d\ndescriptors:\n  - {key: k, rate_limit: {unit: hour}}\n")) {
    utf16 += c;
    utf16 += '\0';
  }
  CHECK(domainOf(utf16).rules.ruleCount() == 1);
}

TEST_CASE("nesting past the limits is refused with its line and says so") {
  // Descriptors in descriptors, 300 levels deep.
  std::string deep = "domain: d\ndescriptors:\n";
  std::string indent = "  ";
  for (int level = 0; level < 300; ++level) {
    deep += indent + "- key: k" + std::to_string(level) + "\n" + indent + "  descriptors:\n";
    indent += "    ";
  }
  deep += indent + "- key: leaf\n";
  checkRefused(deep, 2 * 64 + 3, "descriptors nested more than 64 levels deep");
  // Lists in lists, in metadata (any YAML), written in flow and in block style.
  const std::string flow =
      "domain: d\ndescriptors:\n  - key: k\n    metadata: {a: " + std::string(400, '[') + std::string(400, ']') + "}\n";
  checkRefused(flow, 4, "nested more than 200 levels deep");
  std::string block = "domain: d\ndescriptors:\n  - key: k\n    metadata:\n";
  indent = "      ";
  for (int level = 0; level < 600; ++level) {
    block += indent + "a:\n";
    indent += " ";
  }
  block += indent + "b: 1\n";
  const std::string refusal = refusalOf(block);
  CHECK_THAT(refusal, Catch::Contains("nested more than 200 levels deep"));
  CHECK_THAT(refusal, !Catch::Contains("bad file"));
}

TEST_CASE("envoyproxy's key_value names are one: the key a_b beside the key a with the value b is refused") {
  checkRefused("domain: d\ndescriptors:\n  - key: a\n    value: b\n  - key: a_b\n", 5,
               "a second descriptor d.a_b, the first at line 3: envoyproxy/ratelimit names the key \"a\" with the "
               "value \"b\" and the key \"a_b\" alike (key_value), and takes them for one");
  checkRefused("domain: d\ndescriptors:\n  - key: a_b\n    value: c\n  - key: a\n    value: b_c\n", 5,
               "a second descriptor");
  // Apart, they load.
  CHECK(domainOf("domain: d\ndescriptors:\n  - {key: a, value: c}\n  - {key: a_b}\n  - {key: a_, value: x}\n").name ==
        "d");
}

TEST_CASE("a directory's entry that cannot be read is named, never passed over") {
  ScratchDirectory directory;
  directory.write("a.yaml", "domain: fine\n");
  std::filesystem::create_symlink(directory.path() / "loop.yaml", directory.path() / "loop.yaml");
  CHECK_THROWS_WITH(swl::ratelimit::loadConfiguration(directory.path()),
                    Catch::StartsWith((directory.path() / "loop.yaml").string() + ": cannot be read: "));
  std::filesystem::remove(directory.path() / "loop.yaml");
  std::filesystem::create_symlink(directory.path() / "nowhere", directory.path() / "dangling.yml");
  CHECK_THROWS_WITH(swl::ratelimit::loadConfiguration(directory.path()),
                    Catch::StartsWith((directory.path() / "dangling.yml").string() + ": cannot be read: "));
  std::filesystem::remove(directory.path() / "dangling.yml");
  // A link to a file is read through.
  const auto target = directory.write("target.txt", "domain: linked\n");
  std::filesystem::create_symlink(target, directory.path() / "linked.yaml");
  CHECK(swl::ratelimit::loadConfiguration(directory.path()).domains().size() == 2);
}

TEST_CASE("the runtime directory is read as goruntime reads it: every file, at any depth, by path") {
  ScratchDirectory directory;
  std::filesystem::create_directories(directory.path() / "nested" / "deeper");
  std::filesystem::create_directories(directory.path() / "..2024_01_01");
  directory.write("basic.yaml",
                  "domain: basic\ndescriptors:\n  - {key: k, rate_limit: {unit: hour, requests_per_unit: 1}}\n");
  directory.write("nested/deeper/no_extension", "domain: deep\n");
  directory.write("nested/another.conf", "domain: another\n");
  directory.write(".hidden.yaml", "domain: hidden\n");
  directory.write("..2024_01_01/basic.yaml", "domain: basic\n");
  std::filesystem::create_directory_symlink(directory.path() / "nested", directory.path() / "linked_directory");
  ScratchDirectory elsewhere;
  const auto target = elsewhere.write("target", "domain: through_a_link\n");
  std::filesystem::create_symlink(target, directory.path() / "linked_file");
  std::filesystem::create_symlink(directory.path() / "nowhere", directory.path() / "dangling");

  const swl::ratelimit::Configuration kept = swl::ratelimit::loadRuntimeConfiguration(directory.path(), true, false);
  std::vector<std::string> names;
  for (const auto& [name, domain] : kept.domains()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"another", "basic", "deep", "through_a_link"});
  REQUIRE(kept.warnings().size() == 2);
  CHECK_THAT(kept.warnings()[0], Catch::StartsWith((directory.path() / "dangling").string() + ": not read: "));
  CHECK(kept.warnings()[1] == (directory.path() / "linked_directory").string() +
                                  ": not read: a link to a directory, which the runtime does not walk into");
  CHECK(kept.find("basic", {{"k", "v"}})->source.file == (directory.path() / "basic.yaml").string());

  // Dot-files read too: the ConfigMap's second copy of basic is a second domain basic, named by path.
  CHECK_THROWS_WITH(swl::ratelimit::loadRuntimeConfiguration(directory.path(), false, false),
                    Catch::StartsWith((directory.path() / "basic.yaml").string() +
                                      ":1: domain \"basic\" is defined "
                                      "already, at " +
                                      (directory.path() / "..2024_01_01" / "basic.yaml").string()));
  CHECK(swl::ratelimit::loadRuntimeConfiguration(directory.path(), false, true).domains().size() == 5);
  CHECK_THROWS_AS(swl::ratelimit::loadRuntimeConfiguration(directory.path() / "missing", true, false), ConfigError);
}

TEST_CASE("a file of 100,000 rules loads, each rule where it is written") {
  std::string text = "domain: big\ndescriptors:\n";
  constexpr int kTenants = 20'000;
  for (int tenant = 0; tenant < kTenants; ++tenant) {
    const std::string t = "t" + std::to_string(tenant);
    text += "  - key: tenant\n    value: " + t + "\n    descriptors:\n";
    text += "      - {key: path, value: /api/orders/*, rate_limit: {unit: minute, requests_per_unit: 600, name: " + t +
            "-o}}\n";
    text +=
        "      - {key: path, value: /api/*/x, rate_limit: {unit: minute, requests_per_unit: 300, replaces: [{name: " +
        t + "-a}]}}\n";
    text += "      - {key: path, rate_limit: {unit: hour, requests_per_unit: 1000, name: " + t + "-a}}\n";
    text +=
        "      - {key: method, value: POST, descriptors: [{key: user, rate_limit: {unit: second, requests_per_unit: "
        "10}}]}\n";
    text += "  - {key: ip, value: 10.0." + std::to_string(tenant) +
            ", rate_limit: {unit: second, requests_per_unit: 50}}\n";
  }
  const Domain domain = domainOf(text);
  CHECK(domain.rules.ruleCount() == 5 * kTenants);
  CHECK(ruleFor(domain, {{"tenant", "t19999"}, {"path", "/api/orders/7"}}).name == "t19999-o");
  CHECK(ruleFor(domain, {{"tenant", "t7"}, {"path", "/api/users/x"}}).replaces == std::vector<std::string>{"t7-a"});
  CHECK(ruleFor(domain, {{"tenant", "t7"}, {"path", "/other"}}).limit == swl::Limit{1000, 1h});
  CHECK(ruleFor(domain, {{"tenant", "t123"}, {"method", "POST"}, {"user", "u"}}).stats_key ==
        "big.tenant_t123.method_POST.user");
  CHECK(ruleFor(domain, {{"ip", "10.0.4242"}}).limit == swl::Limit{50, 1s});
  CHECK(domain.rules.find({{"tenant", "t20000"}, {"path", "/other"}}) == nullptr);
}

// ------------------------------------------------------------------------------------------------------
// The loader's parts alone: a scalar as yaml.v2 resolves it (config/yaml/scalar.hpp), and a document's events
// with aliases replayed and merge keys expanded (config/yaml/events.hpp).

namespace {

namespace yaml = swl::ratelimit::yaml;

yaml::Resolved plain(std::string_view text) { return yaml::resolvePlain(text); }

yaml::Resolved tagged(std::string_view text, std::string_view tag) {
  return yaml::resolveScalar(yaml::Scalar{text, 1, yaml::ScalarStyle::tagged, tag}, "test.yaml");
}

bool isInteger(const yaml::Resolved& resolved, std::int64_t integer) {
  return resolved.kind == yaml::Kind::integer && resolved.integer == integer;
}

bool isFloat(const yaml::Resolved& resolved, double floating) {
  return resolved.kind == yaml::Kind::floating && resolved.floating == floating;
}

// The events a document delivers, as one line: `{` and `}` around a map, `[` and `]` around a list,
// each scalar's text, marked `^` when it comes from a merged map.
class Recorder final : public yaml::Handler {
 public:
  void scalar(const yaml::Scalar& scalar, bool merged) override { add((merged ? "^" : "") + std::string(scalar.text)); }
  void start(bool is_map, int) override {
    add(is_map ? "{" : "[");
    maps_.push_back(is_map);
  }
  void end() override {
    add(maps_.back() ? "}" : "]");
    maps_.pop_back();
  }
  const std::string& events() const { return events_; }

 private:
  void add(const std::string& event) { events_ += (events_.empty() ? "" : " ") + event; }

  std::string events_;
  std::vector<bool> maps_;
};

std::string eventsOf(const std::string& text) {
  Recorder recorder;
  yaml::readFirstDocument(text, "test.yaml", recorder);
  return recorder.events();
}

}  // namespace

TEST_CASE("an unquoted scalar resolves as yaml.v2 resolves it: null, YAML 1.1's booleans, Go's integers, floats") {
  for (const char* null : {"", "~", "null", "Null", "NULL"}) CHECK(plain(null).kind == yaml::Kind::null);
  for (const char* yes : {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}) {
    INFO(yes);
    CHECK((plain(yes).kind == yaml::Kind::boolean && plain(yes).boolean));
  }
  for (const char* no : {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}) {
    INFO(no);
    CHECK((plain(no).kind == yaml::Kind::boolean && !plain(no).boolean));
  }
  // strconv.ParseInt(text, 0, 64), once the underscores are gone.
  CHECK(isInteger(plain("42"), 42));
  CHECK(isInteger(plain("+42"), 42));
  CHECK(isInteger(plain("-42"), -42));
  CHECK(isInteger(plain("0x1F"), 31));
  CHECK(isInteger(plain("0o17"), 15));
  CHECK(isInteger(plain("017"), 15));
  CHECK(isInteger(plain("0b101"), 5));
  CHECK(isInteger(plain("1_000"), 1000));
  CHECK(isInteger(plain("-9223372036854775808"), INT64_MIN));
  // Past int64 but within uint64: a uint64; signed, or past uint64: a float.
  CHECK(plain("9223372036854775808").kind == yaml::Kind::big_integer);
  CHECK(plain("18446744073709551615").kind == yaml::Kind::big_integer);
  CHECK(isFloat(plain("18446744073709551616"), 18446744073709551616.0));
  CHECK(isFloat(plain("-9223372036854775809"), -9223372036854775809.0));
  // Not an integer in Go's notation, but a float in YAML's: 08 is not octal.
  CHECK(isFloat(plain("08"), 8));
  CHECK(isFloat(plain("1.5"), 1.5));
  CHECK(isFloat(plain(".5"), 0.5));
  CHECK(isFloat(plain("1e3"), 1000));
  CHECK(isFloat(plain("-.inf"), -HUGE_VAL));
  CHECK(std::isnan(plain(".NaN").floating));
  // Anything else is text: words yaml.v2 does not know, other cases, numbers past a double; dates too,
  // which yaml.v2 gives envoyproxy/ratelimit as text.
  for (const char* text : {"yES", "nope", "0x", "1.2.3", "1e400", "12:30", "2024-01-01", "_1", ". 5", "+"}) {
    INFO(text);
    CHECK(plain(text).kind == yaml::Kind::text);
  }
}

TEST_CASE("a quoted scalar is text, and a tagged one is what its tag says or refused") {
  CHECK(yaml::resolveScalar(yaml::Scalar{"5", 1, yaml::ScalarStyle::quoted, ""}, "test.yaml").kind == yaml::Kind::text);
  CHECK(isInteger(tagged("5", "tag:yaml.org,2002:int"), 5));
  CHECK(isFloat(tagged("5", "tag:yaml.org,2002:float"), 5));
  CHECK(tagged("yes", "tag:yaml.org,2002:bool").boolean);
  CHECK(tagged("~", "tag:yaml.org,2002:null").kind == yaml::Kind::null);
  CHECK(tagged("yes", "tag:yaml.org,2002:str").kind == yaml::Kind::text);
  CHECK(tagged("5", "!mine").kind == yaml::Kind::text);
  CHECK_THROWS_WITH(tagged("five", "tag:yaml.org,2002:int"), "test.yaml:1: not valid YAML: \"five\" is not a !!int");
  // Through the parser: `!` alone makes text of a plain scalar.
  CHECK(ruleFor(domainOf("domain: d\ndescriptors:\n  - {key: k, value: ! 5, rate_limit: {unit: hour}}\n"), {{"k", "5"}})
            .stats_key == "d.k_5");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: !!bool maybe\n", 4, "\"maybe\" is not a !!bool");
}

TEST_CASE("a document's aliases are replayed where they are written, naming the anchor before them") {
  CHECK(eventsOf("a: &x [1, {b: 2}]\nc: *x\n") == "{ a [ 1 { b 2 } ] c [ 1 { b 2 } ] }");
  CHECK(eventsOf("a: &x 1\n*x : 2\n") == "{ a 1 1 2 }");
  // A name given again names the later node from there on; an alias already written keeps its node.
  CHECK(eventsOf("a: &x 1\nb: &y [*x]\nc: &x 3\nd: *y\ne: *x\n") == "{ a 1 b [ 1 ] c 3 d [ 1 ] e 3 }");
  CHECK_THROWS_WITH(eventsOf("a: *x\nb: &x 1\n"),
                    "test.yaml:1: not valid YAML: the alias *x names no anchor (&x) written before it");
  CHECK_THROWS_WITH(eventsOf("a: &x\n  b: *x\n"),
                    "test.yaml:2: the alias *x is inside the node it names: it would nest forever");
}

TEST_CASE("a merge key's maps become the merging map's keys, the first map's kept, as yaml.v2 merges them") {
  CHECK(eventsOf("base: &b {u: 1, v: 2}\nm: {<<: *b, v: 3}\n") == "{ base { u 1 v 2 } m { ^u ^1 ^v ^2 v 3 } }");
  // A list of maps is merged from its last map to its first: a key given twice keeps its last value.
  CHECK(eventsOf("m:\n  <<: [{u: 1}, {u: 2, w: [3]}]\n  x: 0\n") == "{ m { ^u ^2 ^w [ 3 ] ^u ^1 x 0 } }");
  CHECK(eventsOf("m: {<<: [], x: 0}\n") == "{ m { x 0 } }");
  // yaml.v2's merge keys: `<<` untagged and unquoted, tagged `!`, or tagged !!merge; quoted, a key.
  CHECK(eventsOf("m: {!!merge <<: {u: 1}}\n") == "{ m { ^u ^1 } }");
  CHECK(eventsOf("m: {! <<: {u: 1}}\n") == "{ m { ^u ^1 } }");
  CHECK(eventsOf("m: {\"<<\": {u: 1}}\n") == "{ m { << { u 1 } } }");
  CHECK(eventsOf("m: <<\n") == "{ m << }");
  for (const char* refused : {"m: {<<: 1}\n", "m: {<<: [1]}\n", "m: {<<: [[]]}\n", "l: &l [1]\nm: {<<: *l}\n"}) {
    INFO(refused);
    CHECK_THROWS_WITH(eventsOf(refused), Catch::Contains("<< merges a map, an alias of one, or a list of them"));
  }
}

TEST_CASE("the first document is read, and a second one's start is reported, not read") {
  Recorder recorder;
  CHECK_FALSE(yaml::readFirstDocument("", "test.yaml", recorder).found);
  CHECK_FALSE(yaml::readFirstDocument("# nothing\n\n", "test.yaml", recorder).found);
  CHECK(recorder.events().empty());
  const yaml::FirstDocument two = yaml::readFirstDocument("a: 1\n--- [\nnot: read\n", "test.yaml", recorder);
  CHECK(two.found);
  CHECK(two.next_document_line == 2);
  CHECK(recorder.events() == "{ a 1 }");
  CHECK(yaml::readFirstDocument("--- 5\n...\n", "test.yaml", recorder).next_document_line == 0);
}
