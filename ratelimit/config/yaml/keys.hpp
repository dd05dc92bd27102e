#pragma once
/// \file
/// The keys of envoyproxy/ratelimit's files and where each is read: the table the reader
/// (domain_reader.hpp) goes by. envoyproxy/ratelimit accepts any of its own keys in any map of the file
/// (validateYamlKeys checks one flat set) and reads each only where it belongs; swl's own are read in a
/// rate_limit only. Plain tables and functions, no I/O.

#include <ratelimit/config/rule.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace swl::ratelimit::reader {

/// A key of the file: envoyproxy/ratelimit's (up to metadata), then swl's.
enum class Key : std::uint8_t {
  domain,
  descriptors,
  key,
  value,
  rate_limit,
  unit,
  requests_per_unit,
  unlimited,
  name,
  replaces,
  shadow_mode,
  quota_mode,
  detailed_metric,
  value_to_metric,
  share_threshold,
  metadata,
  // swl's
  algorithm,
  calendar,
  time_zone,
  weight,
  unknown,  // a word that is no key
  none,     // no key yet
};

/// Each key's name, in Key's order.
inline constexpr std::array<std::string_view, 20> kKeyNames{"domain",
                                                            "descriptors",
                                                            "key",
                                                            "value",
                                                            "rate_limit",
                                                            "unit",
                                                            "requests_per_unit",
                                                            "unlimited",
                                                            "name",
                                                            "replaces",
                                                            "shadow_mode",
                                                            "quota_mode",
                                                            "detailed_metric",
                                                            "value_to_metric",
                                                            "share_threshold",
                                                            "metadata",
                                                            "algorithm",
                                                            "calendar",
                                                            "time_zone",
                                                            "weight"};

/// The key `text` names, or Key::unknown.
inline Key keyNamed(std::string_view text) {
  for (std::size_t at = 0; at < kKeyNames.size(); ++at) {
    if (kKeyNames[at] == text) return static_cast<Key>(at);
  }
  return Key::unknown;
}

inline std::string_view nameOf(Key key) { return kKeyNames[static_cast<std::size_t>(key)]; }

/// Whether envoyproxy/ratelimit knows `key` (and so accepts it in any map).
inline bool envoysKey(Key key) { return key <= Key::metadata; }

/// Where a key is read, for the warning that says it is not read here.
inline std::string_view whereRead(Key key) {
  switch (key) {
    case Key::domain:
      return "at the file's top level";
    case Key::unit:
    case Key::requests_per_unit:
    case Key::unlimited:
    case Key::replaces:
      return "in a rate_limit";
    case Key::name:
      return "in a rate_limit or a replaces entry";
    default:
      return "in a descriptor";
  }
}

/// What each map or list of the file is for.
enum class Place : std::uint8_t {
  document,        // the document itself: one node
  file,            // the top-level map: domain, descriptors
  descriptors,     // a list of descriptors
  descriptor,      // key, value, rate_limit, descriptors, flags, metadata
  rate_limit,      // unit, requests_per_unit, unlimited, name, replaces; swl's keys
  replaces,        // a list of {name: ...}
  replaces_entry,  // name
  metadata,        // anything at all, not read
  ignored,         // the value of a key where it means nothing: checked as envoyproxy checks it, not read
  skipped,         // the value of an unknown key: the file is refused already
};

inline std::string_view nameOf(Place place) {
  switch (place) {
    case Place::file:
      return "the file";
    case Place::descriptor:
      return "a descriptor";
    case Place::rate_limit:
      return "a rate_limit";
    case Place::replaces_entry:
      return "a replaces entry";
    default:
      return "this map";
  }
}

/// The keys read in a map of `place`, for the message that refuses an unknown one.
inline std::string_view keysReadIn(Place place) {
  switch (place) {
    case Place::file:
      return "domain, descriptors";
    case Place::descriptor:
      return "key, value, rate_limit, descriptors, shadow_mode, quota_mode, detailed_metric, value_to_metric, "
             "share_threshold, metadata";
    case Place::rate_limit:
      return "unit, requests_per_unit, unlimited, name, replaces, algorithm, calendar, time_zone, weight";
    case Place::replaces_entry:
      return "name";
    default:
      return "envoyproxy/ratelimit's keys";
  }
}

/// Whether `key` is read in a map of `place`.
inline bool readIn(Place place, Key key) {
  switch (place) {
    case Place::file:
      return key == Key::domain || key == Key::descriptors;
    case Place::descriptor:
      return key == Key::key || key == Key::value || key == Key::rate_limit || key == Key::descriptors ||
             key == Key::shadow_mode || key == Key::quota_mode || key == Key::detailed_metric ||
             key == Key::value_to_metric || key == Key::share_threshold || key == Key::metadata;
    case Place::rate_limit:
      return key == Key::unit || key == Key::requests_per_unit || key == Key::unlimited || key == Key::name ||
             key == Key::replaces || key == Key::algorithm || key == Key::calendar || key == Key::time_zone ||
             key == Key::weight;
    case Place::replaces_entry:
      return key == Key::name;
    default:
      return false;
  }
}

/// `algorithm:`'s words.
struct AlgorithmName {
  std::string_view name;
  Algorithm algorithm;
};
inline constexpr std::array<AlgorithmName, 3> kAlgorithms{{
    {"sliding_window_log", Algorithm::sliding_window_log},
    {"gcra", Algorithm::gcra},
    {"fixed_window", Algorithm::fixed_window},
}};

/// The unit `name` names, in any case (envoyproxy/ratelimit upper-cases it), or nullptr.
inline const UnitInfo* unitNamed(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  for (const UnitInfo& unit : kUnits) {
    if (unit.name == lower) return &unit;
  }
  return nullptr;
}

}  // namespace swl::ratelimit::reader
