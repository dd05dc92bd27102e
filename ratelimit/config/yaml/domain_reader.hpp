#pragma once
/// \file
/// The reader of envoyproxy/ratelimit's files: a yaml::Handler that takes the first document's maps,
/// lists and scalars (events.hpp) and knows what each is for by where it is (the file, a
/// descriptor, a rate_limit...), then makes the domain's tree from what the descriptors said. A key is
/// read where it belongs, validated and ignored (with a warning) where it means nothing, as
/// envoyproxy/ratelimit does, and refused where it is unknown (keys.hpp).
///
/// envoyproxy/ratelimit checks a file in three passes over different decodings of it: a check of every
/// key and scalar (validateYamlKeys) on a decoding where a key given twice keeps its last value, a typed
/// decoding whose type errors stand even when a later key replaces the value, and its own checks on what
/// the typed decoding kept. One pass here keeps all three: a type error refuses the file at once, while
/// the other refusals wait in the map whose key they are under, and are dropped if that key is given
/// again; whatever is left when the document ends refuses the file.
///
/// No I/O: events in, a Domain (or a ConfigError "file:line: ...") out.
///
///   reader::DomainReader reader(file);
///   yaml::readFirstDocument(text, file, reader);
///   Domain domain = reader.finish();

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/error.hpp>
#include <ratelimit/config/rule.hpp>
#include <ratelimit/config/rule_tree.hpp>
#include <ratelimit/config/yaml/events.hpp>
#include <ratelimit/config/yaml/keys.hpp>
#include <ratelimit/config/yaml/scalar.hpp>

#include <swl/algorithms/fixed_window.hpp>
#include <swl/algorithms/gcra.hpp>
#include <swl/algorithms/sliding_window_log.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// "b.yaml:7: a second descriptor shop.user_admin, the first at line 3: ...": two descriptors of
/// `domain` that envoyproxy/ratelimit takes for one.
inline std::string repeatMessage(const std::string& domain, const RuleTree& tree, const RuleTree::Repeat& repeat) {
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

namespace reader {

// Past these a file is refused: no real file comes close, and aliases can make one of any size.
inline constexpr std::size_t kMostLevels = 64;  // descriptors within descriptors
inline constexpr std::size_t kMostDescriptors = 1'000'000;
inline constexpr std::size_t kMostWarnings = 100;  // per file; then one line says how many more
// Envoy's API holds requests_per_unit in a uint32, and so does envoyproxy/ratelimit's YAML.
inline constexpr std::uint32_t kMostRequests = 4294967295u;
inline constexpr std::uint32_t kNone = RuleTree::kNone;

using yaml::described;
using yaml::Kind;
using yaml::Resolved;
using yaml::Scalar;
using yaml::ScalarStyle;

// A refusal that a later repeat of the key it is under may still drop.
struct Deferred {
  Key key;  // Key::none: the map's or list's own
  int line;
  std::string message;
};

struct Frame {
  Frame(Place place, bool is_map, int line) : place(place), is_map(is_map), line(line) {}

  Place place;
  bool is_map;
  int line;
  // In a map: the key whose value comes next (Key::none while a key is awaited), and what becomes of
  // that value.
  Key key = Key::none;
  int key_line = 0;
  enum class Value : std::uint8_t { read, ignored, skipped } value = Value::read;
  std::uint32_t assigned = 0;                    // the keys given a value in this map, by bit
  std::array<int, kKeyNames.size()> given_at{};  // where each key is first written here (not merged), or 0
  std::uint32_t descriptor = kNone;              // a descriptor: itself; a list of descriptors: their parent
  std::size_t level = 0;                         // descriptors: how deep (1 for the file's own)
  std::vector<Deferred> deferred;
};

// What one descriptor says, gathered while its map is read; its children are a chain of indices.
struct WrittenDescriptor {
  std::string key;
  std::string value;
  int line = 0;
  bool shadow_mode = false;
  bool quota_mode = false;
  bool detailed_metric = false;
  bool value_to_metric = false;
  bool share_threshold = false;
  std::uint32_t rule = kNone;  // kept by the domain's RuleTree (keepRule)
  std::uint32_t first_child = kNone;
  std::uint32_t last_child = kNone;
  std::uint32_t next = kNone;
};

// What one rate_limit says. A second `rate_limit:` in a descriptor adds to the first, field by field,
// as yaml.v2 decodes into the pointer it made for the first; null takes it away.
struct WrittenRateLimit {
  bool present = false;
  int line = 0;
  std::string unit;
  int unit_line = 0;
  std::uint32_t requests_per_unit = 0;
  int requests_line = 0;
  bool unlimited = false;
  std::string name;
  std::vector<std::pair<std::string, int>> replaces;
  std::optional<std::string> algorithm;
  int algorithm_line = 0;
  std::optional<bool> calendar;
  int calendar_line = 0;
  std::optional<std::string> time_zone;
  int time_zone_line = 0;
  std::optional<std::int64_t> weight;
  int weight_line = 0;
};

/// Reads one file's document, as yaml::readFirstDocument delivers it, into its Domain. One frame per
/// open map or list says what it is for.
class DomainReader final : public yaml::Handler {
 public:
  /// `file` names the file in messages and in the rules' SourceLocation; it must outlive the reader.
  explicit DomainReader(const std::string& file) : file_(file) {
    frames_.reserve(yaml::kMostYamlLevels + 2);
    frames_.emplace_back(Place::document, false, 1);
    written_.emplace_back();  // the file's own list of descriptors hangs from written_[0]
    rate_limits_.resize(kMostLevels + 2);
  }

  void scalar(const Scalar& scalar, bool merged) override {
    Frame& top = frames_.back();
    if (top.is_map && top.key == Key::none) {
      takeKey(top, scalar, merged);
      return;
    }
    takeScalarValue(top, scalar);
    if (top.is_map) top.key = Key::none;
  }

  void start(bool is_map, int line) override {
    Frame& top = frames_.back();
    if (top.is_map && top.key == Key::none) {
      refuse(line, std::string(nameOf(top.place)) + " has a key that is not a word but a " + (is_map ? "map" : "list"));
    }
    Frame child{placeOfChild(top, is_map, line), is_map, line};
    if (child.place == Place::descriptor) startDescriptor(top, child);
    if (child.place == Place::descriptors) {
      child.level = top.place == Place::file ? 1 : top.level + 1;
      child.descriptor = top.descriptor;
    }
    if (child.place == Place::rate_limit || child.place == Place::replaces || child.place == Place::replaces_entry) {
      child.level = top.level;
      child.descriptor = top.descriptor;
    }
    if (child.place == Place::replaces_entry) rate_limits_[child.level].replaces.emplace_back("", line);
    frames_.push_back(std::move(child));
  }

  void end() override {
    Frame done = std::move(frames_.back());
    frames_.pop_back();
    if (done.place == Place::descriptor) finishDescriptor(done);
    Frame& parent = frames_.back();
    if (!done.deferred.empty()) {
      const auto first = std::min_element(done.deferred.begin(), done.deferred.end(),
                                          [](const Deferred& a, const Deferred& b) { return a.line < b.line; });
      parent.deferred.push_back({parent.is_map ? parent.key : Key::none, first->line, std::move(first->message)});
    }
    if (parent.is_map) parent.key = Key::none;
  }

  /// The document is over: what it says, made into the domain, with its warnings. What it says wrong is
  /// a ConfigError.
  Domain finish() {
    Frame& document = frames_.front();
    if (!document.deferred.empty()) {
      const auto first = std::min_element(document.deferred.begin(), document.deferred.end(),
                                          [](const Deferred& a, const Deferred& b) { return a.line < b.line; });
      refuse(first->line, first->message);
    }
    if (!has_domain_) refuse(domain_line_, "no domain: every file names its domain");
    if (domain_.name.empty()) refuse(domain_line_, "the domain is empty");
    Domain domain = makeDomain();
    if (warnings_dropped_ > 0) {
      warnings_.push_back(file_ + ": and " + std::to_string(warnings_dropped_) + " more warnings");
    }
    domain.warnings = std::move(warnings_);
    return domain;
  }

 private:
  [[noreturn]] void refuse(int line, const std::string& why) const { throw ConfigError(lineAt(file_, line) + why); }

  void warn(int line, const std::string& what) {
    if (warnings_.size() < kMostWarnings) {
      warnings_.push_back(lineAt(file_, line) + what);
    } else {
      ++warnings_dropped_;
    }
  }

  void defer(Frame& frame, Key key, int line, std::string message) {
    frame.deferred.push_back({key, line, std::move(message)});
  }

  // ----- keys

  void takeKey(Frame& map, const Scalar& scalar, bool merged) {
    const Resolved resolved = yaml::resolveScalar(scalar, file_);
    map.key_line = scalar.line;
    if (map.place == Place::metadata || map.place == Place::skipped) {
      map.key = Key::unknown;
      map.value = map.place == Place::metadata ? Frame::Value::read : Frame::Value::skipped;
      return;
    }
    if (resolved.kind != Kind::text) {
      map.key = Key::unknown;
      map.value = Frame::Value::skipped;
      defer(map, Key::none, scalar.line,
            "the key " + std::string(resolved.kind == Kind::null ? "null" : scalar.text) + " is read as " +
                (resolved.kind == Kind::boolean ? "a boolean"
                 : resolved.kind == Kind::null  ? "null"
                                                : "a number") +
                ", not a word (YAML 1.1): keys are words");
      return;
    }
    const Key key = keyNamed(scalar.text);
    map.key = key;
    if (key == Key::unknown || (!envoysKey(key) && map.place != Place::rate_limit)) {
      map.value = Frame::Value::skipped;
      std::string message = "unknown key " + inQuotes(scalar.text) + " in " + std::string(nameOf(map.place));
      if (key != Key::unknown) {
        message += ": swl's " + std::string(scalar.text) + " is read in a rate_limit only";
      } else if (map.place != Place::ignored) {
        message += " (" + std::string(keysReadIn(map.place)) + ")";
      }
      defer(map, Key::none, scalar.line, std::move(message));
      return;
    }
    // The last value of a key given twice is the one kept: what was refused in an earlier one goes.
    const std::uint32_t bit = 1u << static_cast<unsigned>(key);
    if (map.assigned & bit) {
      map.deferred.erase(std::remove_if(map.deferred.begin(), map.deferred.end(),
                                        [&](const Deferred& refusal) { return refusal.key == key; }),
                         map.deferred.end());
    }
    map.assigned |= bit;
    // A key a merge (`<<`) brings is meant to be overridden: only a key written twice is warned of.
    int& given_at = map.given_at[static_cast<std::size_t>(key)];
    if (!merged && given_at != 0 && map.place != Place::ignored) {
      warn(scalar.line, std::string(scalar.text) + " is given again in " + std::string(nameOf(map.place)) +
                            " (first at line " + std::to_string(given_at) +
                            "): the last is read, as envoyproxy/ratelimit reads it");
    } else if (!merged && given_at == 0) {
      given_at = scalar.line;
    }
    if (map.place == Place::ignored) {
      map.value = key == Key::metadata ? Frame::Value::skipped : Frame::Value::ignored;
      return;
    }
    if (readIn(map.place, key)) {
      map.value = Frame::Value::read;
      return;
    }
    map.value = key == Key::metadata ? Frame::Value::skipped : Frame::Value::ignored;
    warn(scalar.line, std::string(scalar.text) + " means nothing in " + std::string(nameOf(map.place)) +
                          " (it is read " + std::string(whereRead(key)) +
                          "): ignored, as envoyproxy/ratelimit ignores it");
  }

  // ----- scalars

  void takeScalarValue(Frame& top, const Scalar& scalar) {
    switch (top.place) {
      case Place::document: {
        const Resolved resolved = yaml::resolveScalar(scalar, file_);
        if (resolved.kind != Kind::null) {
          refuse(scalar.line, "the file is " + described(scalar, resolved) + ", not a map of domain and descriptors");
        }
        return;
      }
      case Place::descriptors:
      case Place::replaces: {
        const Resolved resolved = yaml::resolveScalar(scalar, file_);
        const std::string_view what = top.place == Place::descriptors ? "descriptor" : "replaces entry";
        if (resolved.kind == Kind::null) {
          defer(top, Key::none, scalar.line,
                std::string(top.place == Place::descriptors ? "descriptors" : "replaces") +
                    " holds an empty item: each is a " + std::string(what) + " (a map)");
        } else {
          refuse(scalar.line, std::string(top.place == Place::descriptors ? "descriptors" : "replaces") + " holds " +
                                  described(scalar, resolved) + ", which is not a " + std::string(what) + " (a map)");
        }
        return;
      }
      case Place::ignored:
        if (!top.is_map) {
          defer(top, Key::none, scalar.line,
                "a list here holds " + described(scalar, yaml::resolveScalar(scalar, file_)) +
                    ": envoyproxy/ratelimit's lists hold maps only");
          return;
        }
        if (top.value == Frame::Value::ignored) checkKind(top, scalar, yaml::resolveScalar(scalar, file_));
        return;
      case Place::metadata:
      case Place::skipped:
        return;
      default:
        break;
    }
    if (top.value == Frame::Value::skipped) return;
    const Resolved resolved = yaml::resolveScalar(scalar, file_);
    checkKind(top, scalar, resolved);
    if (top.value == Frame::Value::read) readField(top, scalar, resolved);
  }

  // validateYamlKeys: a scalar is text, a whole number of int64, a boolean or null; a float, or a
  // number past int64, refuses the file.
  void checkKind(Frame& map, const Scalar& scalar, const Resolved& resolved) {
    if (resolved.kind == Kind::floating || resolved.kind == Kind::big_integer) {
      defer(map, map.key, scalar.line,
            std::string(nameOf(map.key)) + " is " + described(scalar, resolved) +
                (resolved.kind == Kind::floating
                     ? ", a number that is not whole, which envoyproxy/ratelimit refuses: quote it if it is text"
                     : ", past the int64 envoyproxy/ratelimit reads: quote it if it is text"));
    }
  }

  static std::string text(const Scalar& scalar, const Resolved& resolved) {
    return resolved.kind == Kind::null ? std::string() : std::string(scalar.text);
  }

  bool flag(const Frame& map, const Scalar& scalar, const Resolved& resolved) {
    if (resolved.kind == Kind::null) return false;
    if (resolved.kind != Kind::boolean) {
      refuse(scalar.line, std::string(nameOf(map.key)) + " is true or false, not " + described(scalar, resolved));
    }
    return resolved.boolean;
  }

  [[noreturn]] void refuseType(const Frame& map, const std::string& expected) {
    refuse(map.key_line, std::string(nameOf(map.key)) + " is " + expected);
  }

  void readField(Frame& map, const Scalar& scalar, const Resolved& resolved) {
    WrittenDescriptor* descriptor = map.descriptor == kNone ? nullptr : &written_[map.descriptor];
    WrittenRateLimit* rate_limit = map.place == Place::rate_limit ? &rate_limits_[map.level] : nullptr;
    switch (map.key) {
      case Key::domain:
        domain_.name = text(scalar, resolved);
        domain_line_ = map.key_line;
        has_domain_ = true;
        return;
      case Key::descriptors:
        if (resolved.kind != Kind::null) refuseType(map, "a list of descriptors, not " + described(scalar, resolved));
        written_[map.place == Place::file ? 0 : map.descriptor].first_child = kNone;
        written_[map.place == Place::file ? 0 : map.descriptor].last_child = kNone;
        return;
      case Key::key:
        descriptor->key = text(scalar, resolved);
        return;
      case Key::value:
        descriptor->value = text(scalar, resolved);
        return;
      case Key::rate_limit:
        if (resolved.kind != Kind::null) {
          refuseType(map, "a map (unit and requests_per_unit, or unlimited: true), not " + described(scalar, resolved));
        }
        rate_limits_[map.level] = WrittenRateLimit{};
        return;
      case Key::shadow_mode:
        descriptor->shadow_mode = flag(map, scalar, resolved);
        return;
      case Key::quota_mode:
        descriptor->quota_mode = flag(map, scalar, resolved);
        return;
      case Key::detailed_metric:
        descriptor->detailed_metric = flag(map, scalar, resolved);
        return;
      case Key::value_to_metric:
        descriptor->value_to_metric = flag(map, scalar, resolved);
        return;
      case Key::share_threshold:
        descriptor->share_threshold = flag(map, scalar, resolved);
        return;
      case Key::metadata:
        if (resolved.kind != Kind::null) refuseType(map, "a map, not " + described(scalar, resolved));
        return;
      case Key::unit:
        rate_limit->unit = text(scalar, resolved);
        rate_limit->unit_line = map.key_line;
        return;
      case Key::requests_per_unit:
        rate_limit->requests_per_unit = requestsPerUnit(map, scalar, resolved);
        rate_limit->requests_line = map.key_line;
        return;
      case Key::unlimited:
        rate_limit->unlimited = flag(map, scalar, resolved);
        return;
      case Key::name:
        if (map.place == Place::replaces_entry) {
          rate_limits_[map.level].replaces.back() = {text(scalar, resolved), map.key_line};
        } else {
          rate_limit->name = text(scalar, resolved);
        }
        return;
      case Key::replaces:
        if (resolved.kind != Kind::null) refuseType(map, "a list of {name: ...}, not " + described(scalar, resolved));
        rate_limit->replaces.clear();
        return;
      case Key::algorithm:
        rate_limit->algorithm = resolved.kind == Kind::null ? std::nullopt : std::optional(std::string(scalar.text));
        rate_limit->algorithm_line = map.key_line;
        return;
      case Key::time_zone:
        rate_limit->time_zone = resolved.kind == Kind::null ? std::nullopt : std::optional(std::string(scalar.text));
        rate_limit->time_zone_line = map.key_line;
        return;
      case Key::calendar:
        rate_limit->calendar = resolved.kind == Kind::null ? std::nullopt : std::optional(flag(map, scalar, resolved));
        rate_limit->calendar_line = map.key_line;
        return;
      case Key::weight:
        rate_limit->weight = resolved.kind == Kind::null ? std::nullopt : std::optional(weight(map, scalar, resolved));
        rate_limit->weight_line = map.key_line;
        return;
      default:
        return;
    }
  }

  // A uint32, as yaml.v2 decodes one: a whole number from 0 to 4294967295 (a float that is one is
  // taken too, though validateYamlKeys refuses floats), or null for 0.
  std::uint32_t requestsPerUnit(const Frame& map, const Scalar& scalar, const Resolved& resolved) {
    const std::string saying = "requests_per_unit " + std::string(scalar.text);
    switch (resolved.kind) {
      case Kind::null:
        return 0;
      case Kind::integer:
        if (resolved.integer < 0) refuse(scalar.line, saying + " is negative");
        if (resolved.integer > kMostRequests) {
          refuse(scalar.line, saying + " is above " + std::to_string(kMostRequests) + ", the most Envoy's API holds");
        }
        return static_cast<std::uint32_t>(resolved.integer);
      case Kind::big_integer:
        refuse(scalar.line, saying + " is above " + std::to_string(kMostRequests) + ", the most Envoy's API holds");
      case Kind::floating:
        if (resolved.floating >= 0 && resolved.floating <= kMostRequests) {
          return static_cast<std::uint32_t>(resolved.floating);
        }
        refuse(scalar.line, saying + " is not a whole number from 0 to " + std::to_string(kMostRequests));
      default:
        break;
    }
    (void)map;
    refuse(scalar.line, "requests_per_unit is a whole number, not " + described(scalar, resolved) +
                            (scalar.style == ScalarStyle::plain ? "" : ": write it without quotes"));
  }

  std::int64_t weight(const Frame& map, const Scalar& scalar, const Resolved& resolved) {
    (void)map;
    const std::string saying = "weight " + std::string(scalar.text);
    if (resolved.kind != Kind::integer) refuse(scalar.line, saying + " is not a whole number");
    if (resolved.integer < 0) refuse(scalar.line, saying + " is negative");
    if (resolved.integer == 0) refuse(scalar.line, "weight is 0: it must be at least 1");
    return resolved.integer;
  }

  // ----- maps and lists

  Place placeOfChild(Frame& top, bool is_map, int line) {
    const char* kind = is_map ? "a map" : "a list";
    switch (top.place) {
      case Place::document:
        if (!is_map) refuse(line, "the file is a list: a file is a map of domain and descriptors");
        return Place::file;
      case Place::descriptors:
        if (!is_map) refuse(line, "descriptors holds a list, which is not a descriptor (a map)");
        return Place::descriptor;
      case Place::replaces:
        if (!is_map) refuse(line, "replaces holds a list, which is not a replaces entry (a map: {name: ...})");
        return Place::replaces_entry;
      case Place::metadata:
        return Place::metadata;
      case Place::skipped:
        return Place::skipped;
      case Place::ignored:
        if (!top.is_map && !is_map) {
          defer(top, Key::none, line, "a list here holds a list: envoyproxy/ratelimit's lists hold maps only");
          return Place::skipped;
        }
        return top.is_map && top.value == Frame::Value::skipped ? Place::skipped : Place::ignored;
      default:
        break;
    }
    if (top.value == Frame::Value::skipped) return Place::skipped;
    if (top.value == Frame::Value::ignored) return Place::ignored;
    switch (top.key) {
      case Key::descriptors: {
        if (is_map) refuseType(top, "a list of descriptors, not a map");
        WrittenDescriptor& parent = written_[top.place == Place::file ? 0 : top.descriptor];
        parent.first_child = parent.last_child = kNone;
        return Place::descriptors;
      }
      case Key::rate_limit: {
        if (!is_map) refuseType(top, "a map (unit and requests_per_unit, or unlimited: true), not a list");
        WrittenRateLimit& rate_limit = rate_limits_[top.level];
        if (!rate_limit.present) {
          rate_limit = WrittenRateLimit{};
          rate_limit.present = true;
          rate_limit.line = top.key_line;
        }
        return Place::rate_limit;
      }
      case Key::replaces:
        if (is_map) refuseType(top, "a list of {name: ...}, not a map");
        rate_limits_[top.level].replaces.clear();
        return Place::replaces;
      case Key::metadata:
        if (!is_map) refuseType(top, "a map, not a list");
        return Place::metadata;
      default:
        refuseType(top, std::string("a single word or number, not ") + kind);
    }
  }

  void startDescriptor(Frame& list, Frame& descriptor) {
    if (++descriptors_read_ > kMostDescriptors) {
      refuse(descriptor.line, "more than " + std::to_string(kMostDescriptors) + " descriptors in one file");
    }
    if (list.level > kMostLevels) {
      refuse(descriptor.line, "descriptors nested more than " + std::to_string(kMostLevels) +
                                  " levels deep (a YAML alias that holds itself?)");
    }
    const std::uint32_t parent = list.descriptor == kNone ? 0 : list.descriptor;
    const auto index = static_cast<std::uint32_t>(written_.size());
    written_.emplace_back();
    written_.back().line = descriptor.line;
    WrittenDescriptor& owner = written_[parent];
    if (owner.last_child == kNone) {
      owner.first_child = index;
    } else {
      written_[owner.last_child].next = index;
    }
    owner.last_child = index;
    descriptor.descriptor = index;
    descriptor.level = list.level;
    rate_limits_[list.level] = WrittenRateLimit{};
  }

  void finishDescriptor(Frame& frame) {
    WrittenDescriptor& descriptor = written_[frame.descriptor];
    written_text_ += descriptor.key.size() + descriptor.value.size();
    if (descriptor.key.empty()) defer(frame, Key::none, frame.line, "a descriptor has no key, or an empty one");
    if (descriptor.share_threshold && descriptor.key.find('*') == std::string::npos &&
        descriptor.value.find('*') == std::string::npos) {
      defer(frame, Key::none, frame.line,
            "share_threshold: true needs a pattern, a value with '*', and key " + inQuotes(descriptor.key) +
                (descriptor.value.empty() ? " has no value" : " has the value " + inQuotes(descriptor.value)));
    }
    WrittenRateLimit& written = rate_limits_[frame.level];
    if (!written.present) return;
    std::optional<Rule> rule = makeRule(frame, written);
    written = WrittenRateLimit{};
    if (!rule) return;
    rule->shadow_mode = descriptor.shadow_mode;
    rule->quota_mode = descriptor.quota_mode;
    rule->detailed_metric = descriptor.detailed_metric;
    descriptor.rule = domain_.rules.keepRule(std::move(*rule));
  }

  // The rule a rate_limit makes, checked as envoyproxy/ratelimit checks it, then as swl can keep it.
  std::optional<Rule> makeRule(Frame& frame, WrittenRateLimit& written) {
    Rule rule;
    rule.name = std::move(written.name);
    rule.source.line = written.line;
    const UnitInfo* unit = unitNamed(written.unit);
    const auto refuseHere = [&](int line, std::string why) {
      defer(frame, Key::none, line, std::move(why));
      return std::optional<Rule>();
    };
    for (auto& [name, line] : written.replaces) {
      if (name.empty()) return refuseHere(line, "a replaces entry has no name, or an empty one");
      if (name == rule.name) return refuseHere(line, "a rate_limit cannot replace itself (" + inQuotes(name) + ")");
      rule.replaces.push_back(std::move(name));
    }
    if (written.unlimited) {
      if (unit) {
        return refuseHere(written.unit_line,
                          "unlimited: true takes no unit: nothing is counted (envoyproxy/ratelimit refuses it too)");
      }
      for (const auto& [given, line] : {std::pair{written.algorithm.has_value(), written.algorithm_line},
                                        std::pair{written.calendar.has_value(), written.calendar_line},
                                        std::pair{written.time_zone.has_value(), written.time_zone_line},
                                        std::pair{written.weight.has_value(), written.weight_line}}) {
        if (given) {
          return refuseHere(line,
                            "unlimited: true takes no algorithm, calendar, time_zone or weight: nothing is counted");
        }
      }
      if (written.unit_line != 0 || written.requests_line != 0) {
        warn(written.unit_line != 0 ? written.unit_line : written.requests_line,
             "unlimited: true ignores unit and requests_per_unit, as envoyproxy/ratelimit does");
      }
      rule.unlimited = true;
      return rule;
    }
    if (!unit) {
      if (written.unit.empty()) {
        return refuseHere(written.line,
                          "rate_limit has no unit (second, minute, hour, day, week, month or year), "
                          "or an empty one (or say unlimited: true)");
      }
      return refuseHere(written.unit_line,
                        "unknown unit " + inQuotes(written.unit) + " (second, minute, hour, day, week, month or year)");
    }
    rule.unit = unit->unit;
    rule.limit = Limit{static_cast<std::int64_t>(written.requests_per_unit), unit->length};
    if (written.weight) {
      rule.weight = *written.weight;
      if (rule.limit.max_requests > 0 && rule.weight > rule.limit.max_requests) {
        return refuseHere(written.weight_line,
                          "weight " + std::to_string(rule.weight) + " is above requests_per_unit " +
                              std::to_string(rule.limit.max_requests) + ": no hit could ever be allowed");
      }
    }
    if (written.time_zone && !written.calendar.value_or(false)) {
      return refuseHere(written.time_zone_line, "time_zone is only for calendar: true");
    }
    rule.calendar = written.calendar.value_or(false);
    if (rule.calendar) {
      if (rule.unit < Unit::day) {
        return refuseHere(written.calendar_line, "calendar periods are days, weeks, months or years, and " +
                                                     std::string(unit->name) + " is none of them");
      }
      rule.time_zone = written.time_zone.value_or("UTC");
      if (rule.time_zone.empty()) return refuseHere(written.time_zone_line, "time_zone is empty");
    }
    rule.algorithm = rule.calendar ? Algorithm::fixed_window : Algorithm::sliding_window_log;
    if (written.algorithm) {
      const std::string& name = *written.algorithm;
      const auto known = std::find_if(kAlgorithms.begin(), kAlgorithms.end(),
                                      [&](const AlgorithmName& candidate) { return candidate.name == name; });
      if (known == kAlgorithms.end()) {
        return refuseHere(written.algorithm_line,
                          "unknown algorithm " + inQuotes(name) + " (sliding_window_log, gcra or fixed_window)");
      }
      if (rule.calendar && known->algorithm != Algorithm::fixed_window) {
        return refuseHere(written.algorithm_line, "calendar periods are counted as fixed windows: algorithm " + name +
                                                      " cannot keep them (say fixed_window, or leave algorithm out)");
      }
      rule.algorithm = known->algorithm;
    }
    // A limit of 0 refuses every hit and never asks Redis: no algorithm keeps it, so none checks it.
    if (rule.limit.max_requests == 0) return rule;
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
      return refuseHere(written.algorithm ? written.algorithm_line : written.requests_line, refusal.what());
    }
    return rule;
  }

  // ----- the domain's tree

  Domain makeDomain() {
    Domain domain = std::move(domain_);
    domain.source = {file_, domain_line_};
    domain.rules.reserve(written_.size(), written_text_);
    std::string stats_key = domain.name;
    std::vector<PathStep> path;
    addChildren(domain.rules, RuleTree::kRoot, written_[0].first_child, stats_key, path);
    written_.clear();
    if (const auto repeat = domain.rules.arrange()) refuseRepeat(domain, *repeat);
    return domain;
  }

  void addChildren(RuleTree& tree, std::uint32_t parent, std::uint32_t first, std::string& stats_key,
                   std::vector<PathStep>& path) {
    for (std::uint32_t at = first; at != kNone; at = written_[at].next) {
      WrittenDescriptor& descriptor = written_[at];
      const std::uint32_t node = tree.addNode(parent, descriptor.key, descriptor.value, file_, descriptor.line);
      const std::size_t stats_size = stats_key.size();
      stats_key.append(".").append(descriptor.key);
      if (!descriptor.value.empty()) stats_key.append("_").append(descriptor.value);
      path.push_back({std::move(descriptor.key), std::move(descriptor.value), descriptor.value_to_metric,
                      descriptor.share_threshold});
      if (descriptor.rule != kNone) {
        Rule& rule = tree.setRule(node, descriptor.rule);
        rule.stats_key = stats_key;
        rule.path = path;
        rule.source.file = file_;
      }
      addChildren(tree, node, descriptor.first_child, stats_key, path);
      path.pop_back();
      stats_key.resize(stats_size);
    }
  }

  [[noreturn]] static void refuseRepeat(const Domain& domain, const RuleTree::Repeat& repeat) {
    throw ConfigError(repeatMessage(domain.name, domain.rules, repeat));
  }

  const std::string& file_;
  std::vector<Frame> frames_;
  // Deques: they grow without moving what they hold, so a large file is never held twice.
  std::deque<WrittenDescriptor> written_;
  std::size_t written_text_ = 0;               // the keys' and values' bytes
  std::vector<WrittenRateLimit> rate_limits_;  // the open descriptors' rate_limits, by level
  std::vector<std::string> warnings_;
  std::size_t warnings_dropped_ = 0;
  std::size_t descriptors_read_ = 0;
  Domain domain_;
  int domain_line_ = 1;
  bool has_domain_ = false;
};

}  // namespace reader
}  // namespace swl::ratelimit
