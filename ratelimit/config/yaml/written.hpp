#pragma once
/// \file
/// What a file says, gathered while the DomainReader (domain_reader.hpp) reads it: one frame per open
/// map or list, saying what it is for, and small records of what each descriptor and rate_limit says,
/// before they become the domain's RuleTree. Plain values, private to the YAML reader.

#include <ratelimit/config/rule_tree.hpp>
#include <ratelimit/config/yaml/keys.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace swl::ratelimit::reader {

// Past these a file is refused: no real file comes close, and aliases can make one of any size.
inline constexpr std::size_t kMostLevels = 64;  // descriptors within descriptors
inline constexpr std::size_t kMostDescriptors = 1'000'000;
inline constexpr std::size_t kMostWarnings = 100;  // per file; then one line says how many more
// Envoy's API holds requests_per_unit in a uint32, and so does envoyproxy/ratelimit's YAML.
inline constexpr std::uint32_t kMostRequests = 4294967295u;
inline constexpr std::uint32_t kNone = RuleTree::kNone;

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

}  // namespace swl::ratelimit::reader
