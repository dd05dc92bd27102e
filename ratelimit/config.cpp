// Reading envoyproxy/ratelimit's YAML with yaml-cpp, which stays inside this file. Every check says the
// file and the line (yaml-cpp counts from 0, people from 1), and refuses the file at its first fault.

#include <ratelimit/config.hpp>

#include <swl/algorithms/fixed_window.hpp>
#include <swl/algorithms/gcra.hpp>
#include <swl/algorithms/sliding_window_log.hpp>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

namespace swl::ratelimit {

namespace {

// Past these, a file is refused: a YAML alias may name a list that holds it, which would nest forever,
// and aliases of aliases grow a tree twice as large with each level.
constexpr int kMostLevels = 64;
constexpr std::size_t kMostDescriptors = 100'000;
// Counts are kept exactly below 2^53, as in every swl::Limit.
constexpr std::int64_t kLargestCount = (std::int64_t{1} << 53) - 1;

// The keys each kind of map may hold, as envoyproxy/ratelimit spells them; then swl's own.
constexpr std::array<std::string_view, 2> kDomainKeys{"domain", "descriptors"};
constexpr std::array<std::string_view, 7> kDescriptorKeys{
    "key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric", "value_to_metric"};
constexpr std::array<std::string_view, 9> kRateLimitKeys{
    "unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm", "calendar", "time_zone", "weight"};
constexpr std::array<std::string_view, 1> kReplacesKeys{"name"};

struct AlgorithmName {
  std::string_view name;
  Algorithm algorithm;
};
constexpr std::array<AlgorithmName, 3> kAlgorithms{{
    {"sliding_window_log", Algorithm::sliding_window_log},
    {"gcra", Algorithm::gcra},
    {"fixed_window", Algorithm::fixed_window},
}};

// One entry of a YAML map: its key (whose line messages give) and its value.
struct Field {
  YAML::Node key;
  YAML::Node value;
};
using Fields = std::map<std::string, Field, std::less<>>;

const Field* find(const Fields& fields, std::string_view name) {
  const auto found = fields.find(name);
  return found == fields.end() ? nullptr : &found->second;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char letter) { return static_cast<char>(std::tolower(letter)); });
  return text;
}

// Reads one file's text into its Domain.
class DomainReader {
 public:
  explicit DomainReader(std::string file) : file_(std::move(file)) {}

  Domain read(std::string_view yaml) {
    const std::string text(yaml);
    try {
      refuseOtherThanOneDocument(text);
      return readDomain(YAML::Load(text));
    } catch (const YAML::Exception& error) {
      // Checking every node's kind before it is read leaves yaml-cpp only the text's syntax to refuse.
      throw ConfigError(at(error.mark.line) + "not valid YAML: " + error.msg);
    }
  }

 private:
  // Parses the documents one by one, and no further than a second: yaml-cpp 0.7's LoadAll never ends on
  // some broken texts (a lone ',', jbeder/yaml-cpp#1040), making empty documents until memory runs out.
  void refuseOtherThanOneDocument(const std::string& text) const {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    DocumentStarts starts;
    if (!parser.HandleNextDocument(starts)) throw ConfigError(at(0) + "the file is empty: it must name its domain");
    const YAML::Mark first = starts.last;
    if (parser.HandleNextDocument(starts)) {
      // A second document that starts where the first did is yaml-cpp failing to read a token.
      if (starts.last.pos == first.pos) throw ConfigError(at(first.line) + "not valid YAML: nothing can start here");
      throw ConfigError(at(starts.last.line) + "a second YAML document: a file defines one domain");
    }
  }

  // Where the last document started; the rest of the parse is left to YAML::Load.
  struct DocumentStarts : YAML::EventHandler {
    YAML::Mark last = YAML::Mark::null_mark();
    void OnDocumentStart(const YAML::Mark& mark) override { last = mark; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  };

  Domain readDomain(const YAML::Node& root) {
    if (!root.IsMap()) refuse(root, "a file is a map of domain and descriptors");
    const Fields fields = fieldsOf(root, kDomainKeys, "the file");
    const Field* name = find(fields, "domain");
    if (!name) refuse(root, "no domain: every file names its domain");
    Domain domain;
    domain.name = text(*name, "domain");
    if (domain.name.empty()) refuse(name->key, "the domain is empty");
    domain.source = {file_, lineOf(name->key)};
    if (const Field* descriptors = find(fields, "descriptors")) {
      readDescriptors(domain.rules, RuleTree::kRoot, *descriptors, domain.name, {}, 1);
    }
    return domain;
  }

  void readDescriptors(RuleTree& tree, std::size_t parent, const Field& list, const std::string& parent_key,
                       const std::vector<PathStep>& parent_path, int level) {
    if (list.value.IsNull()) return;
    if (!list.value.IsSequence()) refuse(list.key, "descriptors is a list of descriptors");
    if (level > kMostLevels) {
      refuse(list.key, "descriptors nested more than " + std::to_string(kMostLevels) +
                           " levels deep (a YAML alias that holds itself?)");
    }
    for (const YAML::Node& descriptor : list.value) {
      readDescriptor(tree, parent, descriptor, parent_key, parent_path, level);
    }
  }

  void readDescriptor(RuleTree& tree, std::size_t parent, const YAML::Node& descriptor, const std::string& parent_key,
                      const std::vector<PathStep>& parent_path, int level) {
    if (++descriptors_read_ > kMostDescriptors) {
      refuse(descriptor, "more than " + std::to_string(kMostDescriptors) + " descriptors in one file");
    }
    if (!descriptor.IsMap()) refuse(descriptor, "a descriptor is a map of key, value, rate_limit, descriptors");
    const Fields fields = fieldsOf(descriptor, kDescriptorKeys, "a descriptor");
    const Field* key = find(fields, "key");
    if (!key) refuse(descriptor, "a descriptor has no key");
    PathStep step{text(*key, "key"), "", flag(find(fields, "value_to_metric"), "value_to_metric")};
    if (step.key.empty()) refuse(key->key, "a descriptor's key is empty");
    // No value, or an empty one, is the key alone, as in envoyproxy/ratelimit.
    if (const Field* value = find(fields, "value"); value && !value->value.IsNull()) step.value = text(*value, "value");

    std::string stats_key = parent_key + "." + step.key;
    if (!step.value.empty()) stats_key += "_" + step.value;
    const std::optional<std::size_t> node = tree.addNode(parent, step.key, step.value);
    if (!node) refuse(key->key, "a second descriptor " + stats_key + ": siblings differ in key or value");

    std::vector<PathStep> path = parent_path;
    path.push_back(std::move(step));
    const bool shadow_mode = flag(find(fields, "shadow_mode"), "shadow_mode");
    const bool detailed_metric = flag(find(fields, "detailed_metric"), "detailed_metric");
    if (const Field* rate_limit = find(fields, "rate_limit")) {
      Rule rule = readRateLimit(*rate_limit);
      rule.shadow_mode = shadow_mode;
      rule.detailed_metric = detailed_metric;
      rule.stats_key = stats_key;
      rule.path = path;
      tree.setRule(*node, std::move(rule));
    }
    if (const Field* nested = find(fields, "descriptors")) {
      readDescriptors(tree, *node, *nested, stats_key, path, level + 1);
    }
  }

  Rule readRateLimit(const Field& rate_limit) {
    if (!rate_limit.value.IsMap()) {
      refuse(rate_limit.key, "rate_limit is a map: unit and requests_per_unit, or unlimited: true");
    }
    const Fields fields = fieldsOf(rate_limit.value, kRateLimitKeys, "a rate_limit");
    Rule rule;
    rule.source = {file_, lineOf(rate_limit.key)};
    if (const Field* name = find(fields, "name")) rule.name = text(*name, "name");
    if (const Field* replaces = find(fields, "replaces")) rule.replaces = readReplaces(*replaces, rule.name);
    rule.unlimited = flag(find(fields, "unlimited"), "unlimited");
    if (rule.unlimited) {
      for (std::string_view limit_key : {"unit", "requests_per_unit", "algorithm", "calendar", "time_zone", "weight"}) {
        if (const Field* given = find(fields, limit_key)) {
          refuse(given->key, "unlimited: true takes no " + std::string(limit_key) + ": nothing is counted");
        }
      }
      return rule;
    }

    const Field* unit = find(fields, "unit");
    if (!unit) refuse(rate_limit.key, "rate_limit has no unit (or say unlimited: true)");
    const UnitInfo& unit_name = readUnit(*unit);
    rule.unit = unit_name.unit;
    const Field* requests = find(fields, "requests_per_unit");
    if (!requests) refuse(rate_limit.key, "rate_limit has no requests_per_unit (or say unlimited: true)");
    rule.limit = Limit{wholeNumber(*requests, "requests_per_unit", kLargestCount), unit_name.length};
    readCalendar(fields, rule);
    readAlgorithm(fields, rule);
    if (const Field* weight = find(fields, "weight")) {
      rule.weight = wholeNumber(*weight, "weight", kLargestCount);
      if (rule.weight > rule.limit.max_requests) {
        refuse(weight->key, "weight " + std::to_string(rule.weight) + " is above requests_per_unit " +
                                std::to_string(rule.limit.max_requests) + ": no hit could ever be allowed");
      }
    }
    return rule;
  }

  const UnitInfo& readUnit(const Field& unit) {
    const std::string name = lowercase(text(unit, "unit"));
    for (const UnitInfo& known : kUnits) {
      if (known.name == name) return known;
    }
    refuse(unit.key, "unknown unit \"" + text(unit, "unit") + "\" (second, minute, hour, day, week, month or year)");
  }

  // Calendar periods need the date library's zone rules, which the service has: the zone's name is
  // only kept here.
  void readCalendar(const Fields& fields, Rule& rule) {
    const Field* calendar = find(fields, "calendar");
    const Field* time_zone = find(fields, "time_zone");
    rule.calendar = flag(calendar, "calendar");
    if (!rule.calendar) {
      if (time_zone) refuse(time_zone->key, "time_zone is only for calendar: true");
      return;
    }
    if (rule.unit < Unit::day) {
      refuse(calendar->key, "calendar periods are days, weeks, months or years, and " +
                                std::string(infoOf(rule.unit).name) + " is none of them");
    }
    rule.time_zone = time_zone ? text(*time_zone, "time_zone") : "UTC";
    if (rule.time_zone.empty()) refuse(time_zone->key, "time_zone is empty");
  }

  void readAlgorithm(const Fields& fields, Rule& rule) {
    const Field* algorithm = find(fields, "algorithm");
    rule.algorithm = rule.calendar ? Algorithm::fixed_window : Algorithm::sliding_window_log;
    if (algorithm) {
      const std::string name = text(*algorithm, "algorithm");
      const auto known = std::find_if(kAlgorithms.begin(), kAlgorithms.end(),
                                      [&](const AlgorithmName& candidate) { return candidate.name == name; });
      if (known == kAlgorithms.end()) {
        refuse(algorithm->key, "unknown algorithm \"" + name + "\" (sliding_window_log, gcra or fixed_window)");
      }
      if (rule.calendar && known->algorithm != Algorithm::fixed_window) {
        refuse(algorithm->key, "calendar periods are counted as fixed windows: algorithm " + name +
                                   " cannot keep them (say fixed_window, or leave algorithm out)");
      }
      rule.algorithm = known->algorithm;
    }
    // Each algorithm says itself which limits it keeps exactly.
    try {
      switch (rule.algorithm) {
        case Algorithm::sliding_window_log:
          SlidingWindowLog::check(rule.limit);
          break;
        case Algorithm::gcra:
          Gcra::check(rule.limit);
          break;
        case Algorithm::fixed_window:
          FixedWindow::check(rule.limit);
          break;
      }
    } catch (const InvalidArgument& refusal) {
      refuse(algorithm ? algorithm->key : find(fields, "requests_per_unit")->key, refusal.what());
    }
  }

  std::vector<std::string> readReplaces(const Field& replaces, const std::string& own_name) {
    if (!replaces.value.IsSequence()) refuse(replaces.key, "replaces is a list of {name: ...}");
    std::vector<std::string> names;
    for (const YAML::Node& entry : replaces.value) {
      if (!entry.IsMap()) refuse(entry, "a replaces entry is a map: {name: ...}");
      const Fields fields = fieldsOf(entry, kReplacesKeys, "a replaces entry");
      const Field* name = find(fields, "name");
      if (!name) refuse(entry, "a replaces entry has no name");
      names.push_back(text(*name, "name"));
      if (names.back().empty()) refuse(name->key, "a replaces entry's name is empty");
      if (names.back() == own_name) refuse(name->key, "a rate_limit cannot replace itself");
    }
    return names;
  }

  // The entries of `map`, each key one of `allowed` and given once.
  template <std::size_t N>
  Fields fieldsOf(const YAML::Node& map, const std::array<std::string_view, N>& allowed, std::string_view what) {
    Fields fields;
    for (const auto& entry : map) {
      if (!entry.first.IsScalar()) refuse(entry.first, std::string(what) + " has a key that is not a word");
      const std::string& name = entry.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        refuse(entry.first, "unknown key \"" + name + "\" in " + std::string(what) + " (" + listed(allowed) + ")");
      }
      if (!fields.emplace(name, Field{entry.first, entry.second}).second) {
        refuse(entry.first, "\"" + name + "\" is given twice in " + std::string(what));
      }
    }
    return fields;
  }

  std::string text(const Field& field, std::string_view name) {
    if (!field.value.IsScalar()) refuse(field.key, std::string(name) + " is a single word or number");
    return field.value.Scalar();
  }

  bool flag(const Field* field, std::string_view name) {
    if (!field) return false;
    bool value = false;
    if (!field->value.IsScalar() || !YAML::convert<bool>::decode(field->value, value)) {
      refuse(field->key, std::string(name) + " is true or false");
    }
    return value;
  }

  // A whole number from 1 to `most`, written in decimal digits.
  std::int64_t wholeNumber(const Field& field, std::string_view name, std::int64_t most) {
    const std::string written = text(field, name);
    const std::string saying = std::string(name) + " " + written;
    if (!written.empty() && written.front() == '-') refuse(field.key, saying + " is negative");
    if (written.empty() ||
        !std::all_of(written.begin(), written.end(), [](unsigned char c) { return std::isdigit(c); })) {
      refuse(field.key, saying + " is not a whole number");
    }
    std::int64_t number = 0;
    for (const char digit : written) {
      if (number > (most - (digit - '0')) / 10) {
        refuse(field.key, saying + " is above " + std::to_string(most));
      }
      number = number * 10 + (digit - '0');
    }
    if (number == 0) refuse(field.key, std::string(name) + " is 0: it must be at least 1");
    return number;
  }

  template <std::size_t N>
  static std::string listed(const std::array<std::string_view, N>& names) {
    std::string list;
    for (std::string_view name : names) list += (list.empty() ? "" : ", ") + std::string(name);
    return list;
  }

  static int lineOf(const YAML::Node& node) { return node.Mark().line + 1; }

  std::string at(int zero_based_line) const { return file_ + ":" + std::to_string(zero_based_line + 1) + ": "; }

  [[noreturn]] void refuse(const YAML::Node& where, const std::string& why) const {
    throw ConfigError(at(where.Mark().line) + why);
  }

  std::string file_;
  std::size_t descriptors_read_ = 0;
};

std::string describe(const SourceLocation& source) { return source.file + ":" + std::to_string(source.line); }

std::vector<std::filesystem::path> configFiles(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error) throw ConfigError(path.string() + ": " + error.message());
  if (!std::filesystem::is_directory(status)) return {path};
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator entry(path, error), end; !error && entry != end; entry.increment(error)) {
    const std::filesystem::path& file = entry->path();
    const std::string name = file.filename().string();
    if (name.empty() || name.front() == '.') continue;
    if (file.extension() != ".yaml" && file.extension() != ".yml") continue;
    std::error_code kind_error;
    if (std::filesystem::is_regular_file(file, kind_error)) files.push_back(file);
  }
  if (error) throw ConfigError(path.string() + ": " + error.message());
  if (files.empty()) throw ConfigError(path.string() + ": no *.yaml or *.yml file in this directory");
  std::sort(files.begin(), files.end());
  return files;
}

std::string contentsOf(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot be opened: " + std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw ConfigError(file.string() + ": cannot be read: " + std::strerror(errno));
  return contents.str();
}

}  // namespace

void Configuration::add(Domain domain) {
  if (const auto taken = domains_.find(domain.name); taken != domains_.end()) {
    throw ConfigError(describe(domain.source) + ": domain \"" + domain.name + "\" is defined already, at " +
                      describe(taken->second.source));
  }
  std::string name = domain.name;
  domains_.emplace(std::move(name), std::move(domain));
}

Domain parseDomain(std::string_view yaml, const std::string& file) { return DomainReader(file).read(yaml); }

Configuration loadConfiguration(const std::filesystem::path& path) {
  Configuration configuration;
  for (const std::filesystem::path& file : configFiles(path)) {
    configuration.add(parseDomain(contentsOf(file), file.string()));
  }
  return configuration;
}

}  // namespace swl::ratelimit
