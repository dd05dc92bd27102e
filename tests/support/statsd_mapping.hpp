#pragma once
// What prometheus/statsd_exporter makes of a statsd name under a mapping file (its pkg/mapper): the rules
// a deployment gives it (Envoy Gateway's for envoyproxy/ratelimit, say), written as data, and the one
// rule a name maps through, with the Prometheus name and labels it gets. As statsd_exporter matches:
//
//   - glob rules first, whatever their place among the others: the name and the rule split at '.' into
//     as many fields each; a rule's field "*" takes any one field (an empty one too) and is captured as
//     $1, $2, ...; of the glob rules that match, the first written wins;
//   - then the regex rules, in order: the first whose regular expression is found anywhere in the name
//     (it is not anchored), its groups being $1, $2, ...;
//   - a rule with a metric type (match_metric_type) takes only that type's lines: counter (|c), gauge
//     (|g) or observer (|ms, |h, |d).
//
// A name no rule maps is exported under statsd_exporter's default name instead; none is returned then.

#include <cctype>
#include <cstddef>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::test {

struct StatsdMapping {
  enum class Match { glob, regex };
  std::string match;
  Match match_type = Match::glob;
  std::string metric_type;                                  // "" for any, "counter", "gauge" or "observer"
  std::string name;                                         // the Prometheus name, with $n
  std::vector<std::pair<std::string, std::string>> labels;  // label, value with $n
};

struct StatsdMapped {
  std::string name;
  std::map<std::string, std::string> labels;
};

namespace statsd_mapping_detail {

inline std::vector<std::string> fields(std::string_view name) {
  std::vector<std::string> split;
  for (;;) {
    const auto dot = name.find('.');
    split.emplace_back(name.substr(0, dot));
    if (dot == std::string_view::npos) return split;
    name.remove_prefix(dot + 1);
  }
}

// Go's regexp.Expand, as statsd_exporter's templates use it: $1 or ${1} is the capture, a name of
// letters, digits and '_' that is not all digits names nothing (empty), "$$" is '$'.
inline std::string expand(std::string_view text, const std::vector<std::string>& captures) {
  std::string out;
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (text[at] != '$' || at + 1 == text.size()) {
      out += text[at];
      continue;
    }
    if (text[at + 1] == '$') {
      out += '$';
      ++at;
      continue;
    }
    const bool braced = text[at + 1] == '{';
    std::size_t end = at + (braced ? 2 : 1);
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    const std::string reference(text.substr(at + (braced ? 2 : 1), end - at - (braced ? 2 : 1)));
    if (reference.empty() || (braced && (end == text.size() || text[end] != '}'))) {
      out += text[at];  // not a reference: the '$' as it is
      continue;
    }
    if (reference.find_first_not_of("0123456789") == std::string::npos) {
      const std::size_t group = std::stoul(reference);
      if (group < captures.size()) out += captures[group];
    }
    at = braced ? end : end - 1;
  }
  return out;
}

inline StatsdMapped mapped(const StatsdMapping& rule, const std::vector<std::string>& captures) {
  StatsdMapped result{expand(rule.name, captures), {}};
  for (const auto& [label, value] : rule.labels) result.labels[label] = expand(value, captures);
  return result;
}

inline bool takes(const StatsdMapping& rule, std::string_view metric_type) {
  return rule.metric_type.empty() || rule.metric_type == metric_type;
}

}  // namespace statsd_mapping_detail

// The metric type statsd_exporter gives a line's type: counter, gauge or observer.
inline std::string statsdMetricType(std::string_view line_type) {
  if (line_type == "c") return "counter";
  if (line_type == "g") return "gauge";
  return "observer";
}

// What `rules` make of the statsd name `name` of a line of `metric_type`; none when no rule maps it.
inline std::optional<StatsdMapped> mapStatsd(const std::vector<StatsdMapping>& rules, std::string_view name,
                                             std::string_view metric_type) {
  using namespace statsd_mapping_detail;
  const std::vector<std::string> name_fields = fields(name);
  for (const StatsdMapping& rule : rules) {
    if (rule.match_type != StatsdMapping::Match::glob || !takes(rule, metric_type)) continue;
    const std::vector<std::string> rule_fields = fields(rule.match);
    if (rule_fields.size() != name_fields.size()) continue;
    std::vector<std::string> captures{std::string(name)};
    bool matches = true;
    for (std::size_t i = 0; i < rule_fields.size() && matches; ++i) {
      if (rule_fields[i] == "*") {
        captures.push_back(name_fields[i]);
      } else {
        matches = rule_fields[i] == name_fields[i];
      }
    }
    if (matches) return mapped(rule, captures);
  }
  for (const StatsdMapping& rule : rules) {
    if (rule.match_type != StatsdMapping::Match::regex) continue;
    std::smatch found;
    const std::string subject(name);
    if (!std::regex_search(subject, found, std::regex(rule.match)) || !takes(rule, metric_type)) continue;
    std::vector<std::string> captures;
    for (const auto& group : found) captures.push_back(group.matched ? group.str() : "");
    return mapped(rule, captures);
  }
  return std::nullopt;
}

}  // namespace swl::test
