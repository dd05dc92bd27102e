// The DomainReader's structure: what each map and list of a file is for, by where it is; its keys,
// read, ignored with a warning, or refused; its descriptors, each with its rate_limit made into a rule;
// and at the end, the domain's tree. What each scalar value is, is fields.cpp's.

#include <ratelimit/config/error.hpp>
#include <ratelimit/config/yaml/domain_reader.hpp>
#include <ratelimit/config/yaml/rate_limit.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace swl::ratelimit::reader {

DomainReader::DomainReader(const std::string& file) : file_(file) {
  frames_.reserve(yaml::kMostYamlLevels + 2);
  frames_.emplace_back(Place::document, false, 1);
  written_.emplace_back();  // the file's own list of descriptors hangs from written_[0]
  rate_limits_.resize(kMostLevels + 2);
}

void DomainReader::scalar(const Scalar& scalar, bool merged) {
  Frame& top = frames_.back();
  if (top.is_map && top.key == Key::none) {
    takeKey(top, scalar, merged);
    return;
  }
  takeScalarValue(top, scalar);
  if (top.is_map) top.key = Key::none;
}

void DomainReader::start(bool is_map, int line) {
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

void DomainReader::end() {
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

Domain DomainReader::finish() {
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

void DomainReader::refuse(int line, const std::string& why) const { throw ConfigError(lineAt(file_, line) + why); }

void DomainReader::warn(int line, const std::string& what) {
  if (warnings_.size() < kMostWarnings) {
    warnings_.push_back(lineAt(file_, line) + what);
  } else {
    ++warnings_dropped_;
  }
}

void DomainReader::defer(Frame& frame, Key key, int line, std::string message) {
  frame.deferred.push_back({key, line, std::move(message)});
}

// ----- keys

void DomainReader::takeKey(Frame& map, const Scalar& scalar, bool merged) {
  const Resolved resolved = yaml::resolveScalar(scalar, file_);  // a wrong tag refuses the file, even here
  map.key_line = scalar.line;
  if (map.place == Place::metadata || map.place == Place::skipped) {
    map.key = Key::unknown;
    map.value = map.place == Place::metadata ? Frame::Value::read : Frame::Value::skipped;
    return;
  }
  if (!takesKnownKey(map, scalar, resolved)) return;
  keyGiven(map, scalar, merged);
  const Key key = map.key;
  if (map.place == Place::ignored) {
    map.value = key == Key::metadata ? Frame::Value::skipped : Frame::Value::ignored;
    return;
  }
  if (readIn(map.place, key)) {
    map.value = Frame::Value::read;
    return;
  }
  map.value = key == Key::metadata ? Frame::Value::skipped : Frame::Value::ignored;
  warn(scalar.line, std::string(scalar.text) + " means nothing in " + std::string(nameOf(map.place)) + " (it is read " +
                        std::string(whereRead(key)) + "): ignored, as envoyproxy/ratelimit ignores it");
}

// The key `scalar` names, as map.key; false, with the refusal deferred and its value skipped, for a key
// that is no word, or no key of envoyproxy/ratelimit's (swl's own, outside a rate_limit).
bool DomainReader::takesKnownKey(Frame& map, const Scalar& scalar, const Resolved& resolved) {
  if (resolved.kind != Kind::text) {
    map.key = Key::unknown;
    map.value = Frame::Value::skipped;
    defer(map, Key::none, scalar.line,
          "the key " + std::string(resolved.kind == Kind::null ? "null" : scalar.text) + " is read as " +
              (resolved.kind == Kind::boolean ? "a boolean"
               : resolved.kind == Kind::null  ? "null"
                                              : "a number") +
              ", not a word (YAML 1.1): keys are words");
    return false;
  }
  const Key key = keyNamed(scalar.text);
  map.key = key;
  if (key != Key::unknown && (envoysKey(key) || map.place == Place::rate_limit)) return true;
  map.value = Frame::Value::skipped;
  std::string message = "unknown key " + inQuotes(scalar.text) + " in " + std::string(nameOf(map.place));
  if (key != Key::unknown) {
    message += ": swl's " + std::string(scalar.text) + " is read in a rate_limit only";
  } else if (map.place != Place::ignored) {
    message += " (" + std::string(keysReadIn(map.place)) + ")";
  }
  defer(map, Key::none, scalar.line, std::move(message));
  return false;
}

// map.key is given a value (again, perhaps): the last value of a key given twice is the one kept, and
// what was refused in an earlier one goes.
void DomainReader::keyGiven(Frame& map, const Scalar& scalar, bool merged) {
  const Key key = map.key;
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
}

// ----- maps and lists

Place DomainReader::placeOfChild(Frame& top, bool is_map, int line) {
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

void DomainReader::startDescriptor(Frame& list, Frame& descriptor) {
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

void DomainReader::finishDescriptor(Frame& frame) {
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
  MadeRule made = makeRule(written);
  written = WrittenRateLimit{};
  if (made.warning) warn(made.warning->line, made.warning->what);
  if (made.refusal) return defer(frame, Key::none, made.refusal->line, std::move(made.refusal->what));
  Rule& rule = *made.rule;
  rule.shadow_mode = descriptor.shadow_mode;
  rule.quota_mode = descriptor.quota_mode;
  rule.detailed_metric = descriptor.detailed_metric;
  descriptor.rule = domain_.rules.keepRule(std::move(rule));
}

// ----- the domain's tree

Domain DomainReader::makeDomain() {
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

void DomainReader::addChildren(RuleTree& tree, std::uint32_t parent, std::uint32_t first, std::string& stats_key,
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

void DomainReader::refuseRepeat(const Domain& domain, const RuleTree::Repeat& repeat) {
  throw ConfigError(repeatMessage(domain.name, domain.rules, repeat));
}

}  // namespace swl::ratelimit::reader
