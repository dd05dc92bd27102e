// A rate_limit made into a Rule, one check after another, each refusing at the line of what it
// refuses: replaces, unlimited, the unit and the limit, the calendar, the algorithm, and last whether
// the algorithm can keep the limit.

#include <ratelimit/config/error.hpp>
#include <ratelimit/config/yaml/keys.hpp>
#include <ratelimit/config/yaml/rate_limit.hpp>

#include <swl/algorithms/fixed_window.hpp>
#include <swl/algorithms/gcra.hpp>
#include <swl/algorithms/sliding_window_log.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace swl::ratelimit::reader {

namespace {

using Refusal = std::optional<Said>;

Refusal takeReplaces(Rule& rule, WrittenRateLimit& written) {
  for (auto& [name, line] : written.replaces) {
    if (name.empty()) return Said{line, "a replaces entry has no name, or an empty one"};
    if (name == rule.name) return Said{line, "a rate_limit cannot replace itself (" + inQuotes(name) + ")"};
    rule.replaces.push_back(std::move(name));
  }
  return std::nullopt;
}

Refusal makeUnlimited(Rule& rule, const WrittenRateLimit& written, std::optional<Said>& warning) {
  if (unitNamed(written.unit)) {
    return Said{written.unit_line,
                "unlimited: true takes no unit: nothing is counted (envoyproxy/ratelimit refuses it too)"};
  }
  for (const auto& [given, line] : {std::pair{written.algorithm.has_value(), written.algorithm_line},
                                    std::pair{written.calendar.has_value(), written.calendar_line},
                                    std::pair{written.time_zone.has_value(), written.time_zone_line},
                                    std::pair{written.weight.has_value(), written.weight_line}}) {
    if (given)
      return Said{line, "unlimited: true takes no algorithm, calendar, time_zone or weight: nothing is counted"};
  }
  if (written.unit_line != 0 || written.requests_line != 0) {
    warning = Said{written.unit_line != 0 ? written.unit_line : written.requests_line,
                   "unlimited: true ignores unit and requests_per_unit, as envoyproxy/ratelimit does"};
  }
  rule.unlimited = true;
  return std::nullopt;
}

Refusal takeLimit(Rule& rule, const WrittenRateLimit& written) {
  const UnitInfo* unit = unitNamed(written.unit);
  if (!unit) {
    if (written.unit.empty()) {
      return Said{written.line,
                  "rate_limit has no unit (second, minute, hour, day, week, month or year), "
                  "or an empty one (or say unlimited: true)"};
    }
    return Said{written.unit_line,
                "unknown unit " + inQuotes(written.unit) + " (second, minute, hour, day, week, month or year)"};
  }
  rule.unit = unit->unit;
  rule.limit = Limit{static_cast<std::int64_t>(written.requests_per_unit), unit->length};
  if (written.weight) {
    rule.weight = *written.weight;
    if (rule.limit.max_requests > 0 && rule.weight > rule.limit.max_requests) {
      return Said{written.weight_line, "weight " + std::to_string(rule.weight) + " is above requests_per_unit " +
                                           std::to_string(rule.limit.max_requests) + ": no hit could ever be allowed"};
    }
  }
  return std::nullopt;
}

Refusal takeCalendar(Rule& rule, const WrittenRateLimit& written) {
  if (written.time_zone && !written.calendar.value_or(false)) {
    return Said{written.time_zone_line, "time_zone is only for calendar: true"};
  }
  rule.calendar = written.calendar.value_or(false);
  if (!rule.calendar) return std::nullopt;
  if (rule.unit < Unit::day) {
    return Said{written.calendar_line, "calendar periods are days, weeks, months or years, and " +
                                           std::string(infoOf(rule.unit).name) + " is none of them"};
  }
  rule.time_zone = written.time_zone.value_or("UTC");
  if (rule.time_zone.empty()) return Said{written.time_zone_line, "time_zone is empty"};
  return std::nullopt;
}

Refusal takeAlgorithm(Rule& rule, const WrittenRateLimit& written) {
  rule.algorithm = rule.calendar ? Algorithm::fixed_window : Algorithm::sliding_window_log;
  if (!written.algorithm) return std::nullopt;
  const std::string& name = *written.algorithm;
  const auto known = std::find_if(kAlgorithms.begin(), kAlgorithms.end(),
                                  [&](const AlgorithmName& candidate) { return candidate.name == name; });
  if (known == kAlgorithms.end()) {
    return Said{written.algorithm_line,
                "unknown algorithm " + inQuotes(name) + " (sliding_window_log, gcra or fixed_window)"};
  }
  if (rule.calendar && known->algorithm != Algorithm::fixed_window) {
    return Said{written.algorithm_line, "calendar periods are counted as fixed windows: algorithm " + name +
                                            " cannot keep them (say fixed_window, or leave algorithm out)"};
  }
  rule.algorithm = known->algorithm;
  return std::nullopt;
}

// Whether the rule's algorithm can keep its limit (gcra counts in Lua's doubles, say).
Refusal checkKept(const Rule& rule, const WrittenRateLimit& written) {
  // A limit of 0 refuses every hit and never asks Redis: no algorithm keeps it, so none checks it.
  if (rule.limit.max_requests == 0) return std::nullopt;
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
    return Said{written.algorithm ? written.algorithm_line : written.requests_line, refusal.what()};
  }
  return std::nullopt;
}

}  // namespace

MadeRule makeRule(WrittenRateLimit& written) {
  Rule rule;
  rule.name = std::move(written.name);
  rule.source.line = written.line;
  MadeRule made;
  made.refusal = takeReplaces(rule, written);
  if (written.unlimited) {
    if (!made.refusal) made.refusal = makeUnlimited(rule, written, made.warning);
  } else {
    if (!made.refusal) made.refusal = takeLimit(rule, written);
    if (!made.refusal) made.refusal = takeCalendar(rule, written);
    if (!made.refusal) made.refusal = takeAlgorithm(rule, written);
    if (!made.refusal) made.refusal = checkKept(rule, written);
  }
  if (!made.refusal) made.rule = std::move(rule);
  return made;
}

}  // namespace swl::ratelimit::reader
