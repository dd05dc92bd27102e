#pragma once
/// \file
/// The configuration of swl-ratelimit: envoyproxy/ratelimit's YAML files, one domain each, read and
/// checked. A file that is wrong in any way is refused whole, with its name, the line and what is wrong;
/// nothing here talks to Redis.
///
///   domain: mongo_cps
///   descriptors:
///     - key: database
///       value: users               # exact; "user*" is a prefix; no value: any value, each counted apart
///       rate_limit:
///         unit: second             # second, minute, hour, day, week, month (30 days), year (365 days)
///         requests_per_unit: 500
///         name: users_limit        # optional; `replaces: [{name: other}]` as in envoyproxy/ratelimit
///         algorithm: gcra          # swl: sliding_window_log (default, exact), gcra or fixed_window
///         weight: 2                # swl: units each hit counts, 1 (default) to requests_per_unit
///       shadow_mode: true          # also detailed_metric and value_to_metric, kept for the service
///     - key: tenant
///       rate_limit:
///         unit: month
///         requests_per_unit: 100000
///         calendar: true           # swl: local calendar days, ISO weeks, months or years
///         time_zone: Europe/Berlin # swl: only with calendar, UTC by default
///
/// What swl adds is refused where it cannot be kept: `calendar` needs a unit of a day or more and is
/// counted as a fixed window (so `algorithm` may only say fixed_window); gcra needs requests_per_unit x
/// the unit in microseconds below 2^53, which Lua counts exactly (at most 285 a year); `unlimited: true`
/// takes no unit, count, algorithm, calendar, time zone or weight. Zero requests_per_unit is refused.
/// A file may nest descriptors 64 levels deep and hold 100,000 of them: YAML aliases can otherwise make
/// a tree of any size, or a cycle.

#include <ratelimit/rule.hpp>
#include <ratelimit/rules.hpp>

#include <swl/error.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace swl::ratelimit {

/// A configuration file is wrong; the message says "file:line: what is wrong".
class ConfigError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// One file's domain and its descriptors.
struct Domain {
  std::string name;
  /// Where `domain:` is written.
  SourceLocation source;
  RuleTree rules;
};

/// Every domain the service answers for.
class Configuration {
 public:
  /// Adds a domain; one of the same name already here is a ConfigError naming both files.
  void add(Domain domain);

  /// The rule `descriptor` reaches in `domain`, or nullptr: an unknown domain reaches none.
  const Rule* find(std::string_view domain, const std::vector<DescriptorEntry>& descriptor) const {
    const auto found = domains_.find(domain);
    return found == domains_.end() ? nullptr : found->second.rules.find(descriptor);
  }

  /// The domains, by name.
  const std::map<std::string, Domain, std::less<>>& domains() const noexcept { return domains_; }

 private:
  std::map<std::string, Domain, std::less<>> domains_;
};

/// The domain one file's text defines; `file` names it in messages. Anything wrong is a ConfigError.
Domain parseDomain(std::string_view yaml, const std::string& file);

/// The configuration at `path`: a file, or a directory whose *.yaml and *.yml files (not those whose
/// name starts with '.', as Kubernetes' ConfigMap mounts have) are read in their names' order. A
/// path that cannot be read, a directory with no such file, or any file wrong is a ConfigError.
Configuration loadConfiguration(const std::filesystem::path& path);

}  // namespace swl::ratelimit
