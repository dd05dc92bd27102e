// swl-ratelimit's configuration (ratelimit/config.hpp): envoyproxy/ratelimit's files load, with what swl
// adds; every fault is refused with the file, the line and what is wrong; any text at all is either a
// domain or a ConfigError.

#include <ratelimit/config.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using swl::ratelimit::Algorithm;
using swl::ratelimit::ConfigError;
using swl::ratelimit::DescriptorEntry;
using swl::ratelimit::Domain;
using swl::ratelimit::Rule;
using swl::ratelimit::Unit;
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

Domain parse(const std::string& yaml) { return swl::ratelimit::parseDomain(yaml, "test.yaml"); }

// What the file is refused with; a file that loads fails the test.
std::string refusalOf(const std::string& yaml) {
  try {
    parse(yaml);
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
  const Domain domain = parse(kEnvoyExample);
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
  const Domain domain = parse(R"(domain: swl
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
  const Domain domain = parse(R"(domain: kept
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
  const Domain domain = parse("domain: quiet\n");
  CHECK(domain.rules.ruleCount() == 0);
  CHECK(domain.rules.find({{"a", "b"}}) == nullptr);
  CHECK(parse("domain: quiet\ndescriptors:\n").rules.ruleCount() == 0);
}

TEST_CASE("a rate_limit wrong in its numbers is refused at its line") {
  const std::string head = "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n";
  checkRefused(head + "      requests_per_unit: -5\n", 6, "requests_per_unit -5 is negative");
  checkRefused(head + "      requests_per_unit: 0\n", 6, "requests_per_unit is 0");
  checkRefused(head + "      requests_per_unit: 1.5\n", 6, "requests_per_unit 1.5 is not a whole number");
  checkRefused(head + "      requests_per_unit: lots\n", 6, "not a whole number");
  checkRefused(head + "      requests_per_unit: 1e3\n", 6, "not a whole number");
  checkRefused(head + "      requests_per_unit: 9007199254740992\n", 6, "is above 9007199254740991");
  checkRefused(head + "      requests_per_unit: 99999999999999999999999\n", 6, "is above");
  checkRefused(head + "      requests_per_unit: [1]\n", 6, "requests_per_unit is a single word or number");
  checkRefused(head + "      requests_per_unit: 10\n      weight: 0\n", 7, "weight is 0");
  checkRefused(head + "      requests_per_unit: 10\n      weight: 11\n", 7, "weight 11 is above requests_per_unit 10");
  checkRefused(head + "      requests_per_unit: 10\n      weight: -1\n", 7, "weight -1 is negative");
}

TEST_CASE("a rate_limit without its unit or count is refused at its line") {
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n", 4,
               "rate_limit has no requests_per_unit");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 5}\n", 4,
               "rate_limit has no unit");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n", 4, "rate_limit is a map");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: 5\n", 4, "rate_limit is a map");
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
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    key: j\n", 4, "\"key\" is given twice in a descriptor");
  checkRefused("domain: d\n[a]: b\n", 2, "has a key that is not a word");
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
  const Domain fine = parse(
      "domain: d\ndescriptors:\n  - key: k\n    descriptors: [{key: n}]\n  - key: j\n    descriptors: [{key: n}]\n"
      "  - {key: k, value: v}\n  - {key: k, value: w}\n  - {key: k, value: \"v*\"}\n");
  CHECK(fine.name == "d");
}

TEST_CASE("unlimited with anything it does not count is refused at that key") {
  checkRefused(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      requests_per_unit: 5\n", 6,
      "unlimited: true takes no requests_per_unit");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      unlimited: true\n", 5,
               "unlimited: true takes no unit");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, weight: 2}\n", 4,
               "unlimited: true takes no weight");
  // unlimited: false is a limit like any other.
  CHECK(parse("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: false, unit: hour, "
              "requests_per_unit: 1}\n")
            .rules.ruleCount() == 1);
}

TEST_CASE("an algorithm or a calendar that cannot keep the limit is refused at its line") {
  const std::string head = "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n";
  checkRefused(head + "      unit: year\n      requests_per_unit: 286\n      algorithm: gcra\n", 7,
               "too fine to count exactly");
  CHECK(parse(head + "      unit: year\n      requests_per_unit: 285\n      algorithm: gcra\n").rules.ruleCount() == 1);
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
  checkRefused("domain: [a, b]\n", 1, "domain is a single word or number");
  checkRefused("", 1, "the file is empty");
  checkRefused("# a comment and nothing else\n", 1, "the file is empty");
  checkRefused("- domain: d\n", 1, "a file is a map of domain and descriptors");
  checkRefused("domain: d\n---\ndomain: e\n", 2, "a second YAML document");
  checkRefused("domain: d\ndescriptors: {key: k}\n", 2, "descriptors is a list");
  checkRefused("domain: d\ndescriptors:\n  - just a word\n", 3, "a descriptor is a map");
  checkRefused("domain: d\ndescriptors:\n  - value: v\n", 3, "a descriptor has no key");
  checkRefused("domain: d\ndescriptors:\n  - key: \"\"\n", 3, "a descriptor's key is empty");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n", 4, "shadow_mode is true or false");
  checkRefused(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1,"
      " replaces: [{name: \"\"}]}\n",
      4, "a replaces entry's name is empty");
  checkRefused(
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, name: a,"
      " replaces: [{name: a}]}\n",
      4, "a rate_limit cannot replace itself");
}

TEST_CASE("a YAML syntax error is refused at the line yaml-cpp found it") {
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: [unclosed\n", 5, "not valid YAML");
  checkRefused("domain: d\ndescriptors:\n  - key: \"quoted\" and not\n", 3, "not valid YAML");
  checkRefused("domain: d\ndescriptors:\n  - key: k\n    value: x\n   - key: j\n", 5, "not valid YAML");
  checkRefused("domain: d\n  bad indentation: x\n", 2, "not valid YAML");
}

TEST_CASE("YAML aliases that nest forever or double at each level are refused") {
  checkRefused("domain: d\ndescriptors: &loop\n  - key: k\n    descriptors: *loop\n", 4, "nested more than 64 levels");
  // Each holder's list names the one before it twice: 2^40 descriptors unless counted.
  std::string nested = "domain: d\ndescriptors:\n  - key: leaf0\n    descriptors: &l0 [{key: leaf}]\n";
  for (int level = 1; level <= 40; ++level) {
    nested += "  - key: holder" + std::to_string(level) + "\n    descriptors: &l" + std::to_string(level) +
              "\n      - {key: a, descriptors: *l" + std::to_string(level - 1) + "}\n      - {key: b, descriptors: *l" +
              std::to_string(level - 1) + "}\n";
  }
  CHECK_THAT(refusalOf(nested), Catch::Contains("more than 100000 descriptors in one file"));
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
      parse(text);
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
  CHECK_THROWS_WITH(swl::ratelimit::loadConfiguration(directory.path()),
                    second.string() + ":2: domain \"shared\" is defined already, at " + first.string() + ":1");
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

TEST_CASE("texts on which yaml-cpp 0.7 loops are refused") {
  // jbeder/yaml-cpp#1040: LoadAll made empty documents from a lone ',' until memory ran out.
  CHECK_THAT(refusalOf(","), Catch::StartsWith("test.yaml:1: not valid YAML"));
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
