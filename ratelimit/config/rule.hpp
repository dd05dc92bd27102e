#pragma once
/// \file
/// What the configuration says about one descriptor: its rate limit and how swl keeps it. Plain values,
/// made by the configuration (configuration.hpp) and found for a request by a RuleTree (rule_tree.hpp).

#include <swl/decision.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace swl::ratelimit {

/// The unit of `requests_per_unit`, as envoyproxy/ratelimit names them (`unit: second`, any case).
enum class Unit { second, minute, hour, day, week, month, year };

/// What a Unit is: its name in the files, its length, and its number in Envoy's API (RateLimitUnit, and
/// RateLimitResponse.RateLimit.Unit, where week came last).
struct UnitInfo {
  std::string_view name;
  Unit unit;
  std::chrono::seconds length;
  int envoy_number;
};

/// Every Unit, in the enum's order. A month is 30 days and a year 365, as envoyproxy/ratelimit counts them.
inline constexpr std::array<UnitInfo, 7> kUnits{{
    {"second", Unit::second, std::chrono::seconds(1), 1},
    {"minute", Unit::minute, std::chrono::minutes(1), 2},
    {"hour", Unit::hour, std::chrono::hours(1), 3},
    {"day", Unit::day, std::chrono::hours(24), 4},
    {"week", Unit::week, std::chrono::hours(24 * 7), 7},
    {"month", Unit::month, std::chrono::hours(24 * 30), 5},
    {"year", Unit::year, std::chrono::hours(24 * 365), 6},
}};

/// kUnits' entry for `unit`.
constexpr const UnitInfo& infoOf(Unit unit) { return kUnits[static_cast<std::size_t>(unit)]; }

/// The swl algorithm that keeps a rule (`algorithm:`). The exact log is the default; a calendar period
/// is always a fixed window (Rule::calendar).
enum class Algorithm {
  /// `sliding_window_log`: every hit of the last unit counted, exactly (swl::SlidingWindowLimiter).
  sliding_window_log,
  /// `gcra`: hits spread evenly, a whole unit's worth allowed at once (swl::GcraLimiter).
  gcra,
  /// `fixed_window`: a counter per unit-long window from the epoch, or per calendar period.
  fixed_window,
};

/// Where something was written: a file and its line, counted from 1.
struct SourceLocation {
  std::string file;
  int line = 0;
};

/// One level of the path that leads to a rule, as written in the file.
struct PathStep {
  /// The descriptor entry's key.
  std::string key;
  /// The value as written: empty for any value; holding '*' for a pattern, each '*' any run of
  /// characters (`files/*`, `/api/*/action`, `foo*bar*baz`); or else the exact value.
  std::string value;
  /// `value_to_metric` of that level: whether its metrics should name the request's value.
  bool value_to_metric = false;
  /// `share_threshold` of a pattern's level: every value the pattern matches counts on one counter (the
  /// pattern's), rather than each value on its own.
  bool share_threshold = false;

  /// Whether the value is a pattern.
  bool isPattern() const noexcept { return value.find('*') != std::string::npos; }
};

/// A descriptor's `rate_limit`, with the descriptor's own flags.
struct Rule {
  /// `name`, empty when the file gives none; what other rules' `replaces` refer to.
  std::string name;
  /// `unlimited: true`: every hit is allowed, and nothing is counted; `limit` is then empty.
  bool unlimited = false;
  /// `requests_per_unit` per `unit`, the unit as a duration: 30 days for a month and 365 for a year (as
  /// envoyproxy/ratelimit counts them), the usual length of one period when `calendar` is set. A
  /// requests_per_unit of 0 (a block list, in envoyproxy/ratelimit's examples) refuses every hit, and
  /// Redis is never asked: no swl::Limit holds 0.
  swl::Limit limit;
  Unit unit = Unit::second;
  Algorithm algorithm = Algorithm::sliding_window_log;
  /// `calendar: true`: the unit is a local calendar day, ISO week, month or year in `time_zone`,
  /// counted as a fixed window (swl::CalendarPeriods), instead of a length of time.
  bool calendar = false;
  /// `time_zone` (IANA, "Europe/Berlin"), "UTC" unless given; only with `calendar`. The zone is checked
  /// against the system's zone data when the limiter is made, not here: that needs the date library.
  std::string time_zone;
  /// `weight`: the units each hit counts, from 1 to requests_per_unit.
  std::int64_t weight = 1;
  /// The descriptor's `shadow_mode`: decide and report, but never refuse.
  bool shadow_mode = false;
  /// The descriptor's `quota_mode`: its refusal refuses the request only when every quota rule of the
  /// request refuses (envoyproxy/ratelimit's overall code).
  bool quota_mode = false;
  /// The descriptor's `detailed_metric`: its metrics should name the request's values.
  bool detailed_metric = false;
  /// The names in `replaces`: rules this one takes the place of when both match one request.
  std::vector<std::string> replaces;
  /// The domain, then each level's key, or key_value as written ("mongo_cps.database_users",
  /// "mongo_cps.to_number.from_number"): envoyproxy/ratelimit's stats key for the rule.
  std::string stats_key;
  /// The levels that lead to the rule, from the domain down.
  std::vector<PathStep> path;
  /// Where its `rate_limit` is written.
  SourceLocation source;
};

}  // namespace swl::ratelimit
