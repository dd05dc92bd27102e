#pragma once
/// \file
/// The configuration of swl-ratelimit: envoyproxy/ratelimit's YAML files, one domain each, read as its
/// Go loader reads them (gopkg.in/yaml.v2 and its own checks): every file it loads loads here, with the
/// same rules, and every file it refuses is refused, with its name, the line and what is wrong. Nothing
/// here talks to Redis.
///
///   domain: mongo_cps
///   descriptors:
///     - key: database
///       value: users               # exact; "user*", "/api/*/v1" or "a*b*c" is a pattern, each '*' any text
///       rate_limit:
///         unit: second             # second, minute, hour, day, week, month (30 days), year (365 days)
///         requests_per_unit: 500   # 0 to 4294967295; 0 (or none) refuses every hit
///         name: users_limit        # optional; `replaces: [{name: other}]` as in envoyproxy/ratelimit
///         algorithm: gcra          # swl: sliding_window_log (default, exact), gcra or fixed_window
///         weight: 2                # swl: units each hit counts, 1 (default) to requests_per_unit
///       shadow_mode: true          # also quota_mode, detailed_metric, value_to_metric, kept for the service
///     - key: path
///       value: "files/*"
///       share_threshold: true      # every value the pattern takes counts on one counter
///       metadata: {team: storage}  # any YAML, not read
///       rate_limit: {unit: minute, requests_per_unit: 100}
///     - key: tenant
///       rate_limit:
///         unit: month
///         requests_per_unit: 100000
///         calendar: true           # swl: local calendar days, ISO weeks, months or years
///         time_zone: Europe/Berlin # swl: only with calendar, UTC by default
///
/// Read as envoyproxy/ratelimit reads it:
/// - YAML 1.1 as yaml.v2 has it: `yes`/`on` are true, `0x10`, `0o20`, `020` and `1_6` are 16, a quoted
///   "5" is text; aliases and merge keys (`<<`) work; of several YAML documents the first is read.
/// - Any of envoyproxy's keys is accepted anywhere, and read only where it belongs; in another place it
///   is ignored, with a warning (`unit:` beside `key:`). A key it does not know is refused. A key given
///   twice in one map: the last is read, with a warning.
/// - requests_per_unit may be 0, or left out (0); `unlimited: true` takes no valid unit, and ignores an
///   unknown one and requests_per_unit; `rate_limit:` with nothing is no rate limit, `rate_limit: {}` has
///   no unit and is refused. `replaces` names no empty name and not the rule's own.
/// - share_threshold needs a pattern. Two siblings with one key and value are refused, and so are the
///   key `a_b` and the key `a` with the value `b`, which envoyproxy/ratelimit takes for one.
/// - The file is UTF-8 (or UTF-16 with its byte order mark) of the characters YAML allows, everywhere in
///   its first document, comments included: a domain, key or value that is not could never match
///   Envoy's strings.
///
/// What swl adds is read in a rate_limit only, and refused where it cannot be kept: `calendar` needs a
/// unit of a day or more and is counted as a fixed window (so `algorithm` may only say fixed_window);
/// gcra needs requests_per_unit x the unit in microseconds below 2^53, which Lua counts exactly (at most
/// 285 a year); `unlimited: true` takes none of them; weight is 1 to requests_per_unit (when that is
/// not 0).
///
/// Limits, past which a file is refused: descriptors nested 64 levels deep, maps and lists 200 levels
/// deep, 1,000,000 descriptors in one file, and 4,000,000 nodes replayed by YAML aliases (aliases can
/// make a tree of any size, or a cycle, from a few lines). Warnings: 100 per file, then a count.
///
/// A file is read in one pass of libyaml's events, with no tree of YAML nodes (yaml/read.cpp says how):
/// 100,000 rules (9 MB) load in about 0.5 s, into 85 MB (bench/README.md).

#include <ratelimit/config/domain.hpp>
#include <ratelimit/config/error.hpp>
#include <ratelimit/config/rule.hpp>
#include <ratelimit/config/rule_tree.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace swl::ratelimit {

/// Every domain the service answers for.
class Configuration {
 public:
  /// Adds a domain and its warnings. One of the same name already here is a ConfigError naming both
  /// files, unless `merge_domains` (envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG): then the later file's
  /// descriptors join the domain, and a descriptor both have at their top level is a ConfigError.
  void add(Domain domain, bool merge_domains = false);

  /// The rule `descriptor` reaches in `domain`, or nullptr: an unknown domain reaches none.
  const Rule* find(std::string_view domain, const std::vector<DescriptorEntry>& descriptor) const {
    const auto found = domains_.find(domain);
    return found == domains_.end() ? nullptr : found->second.rules.find(descriptor);
  }

  /// The domains, by name.
  const std::map<std::string, Domain, std::less<>>& domains() const noexcept { return domains_; }

  /// What the files say that is likely a slip, and what a loader passed over: for the log.
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }

  /// Adds a warning.
  void warn(std::string warning);

 private:
  std::map<std::string, Domain, std::less<>> domains_;
  std::vector<std::string> warnings_;
};

}  // namespace swl::ratelimit
