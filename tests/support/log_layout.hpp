#pragma once
// Reads a sliding window log's sorted set whole and checks that its bookkeeping agrees with its entries:
// the layout algorithms/sliding_window.hpp describes. Tests call it after traces, so that a sum the
// script keeps wrong shows even where no decision has yet read it.

#include <swl/redis/connection.hpp>

#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace swl::test {

// The first disagreement between `redis_key`'s entries and its bookkeeping, or "" when there is none.
inline std::string logLayoutProblem(swl::Connection& connection, const std::string& redis_key) {
  constexpr std::int64_t kExtraAt = -6755399441055744, kOldestAt = -4503599627370496, kNodesAt = 9007199254740992;
  constexpr std::int64_t kFanout = 64;
  constexpr int kLevels = 4;
  const swl::Reply reply = connection.command({"ZRANGE", redis_key, "0", "-1", "WITHSCORES"});
  struct Member {
    std::string name;
    double score;
  };
  std::vector<Member> members;
  for (std::size_t i = 0; i + 1 < reply->size(); i += 2) {
    members.push_back({std::string((*reply)[i].text()), std::stod(std::string((*reply)[i + 1].text()))});
  }
  const std::regex marked(".*[*+=]([0-9]+)$");
  const auto unitsOf = [&](const std::string& name) {
    std::smatch match;
    return std::regex_match(name, match, marked) ? std::stoll(match[1]) : 1;
  };
  std::vector<const Member*> entries;
  std::map<std::string, std::int64_t> nodes;
  bool by_units = false;
  std::int64_t extra = 0, oldest = 0;
  for (const Member& member : members) {
    if (member.name == "#") {
      by_units = true;
      extra = static_cast<std::int64_t>(member.score) - kExtraAt;
    } else if (member.name == "#o") {
      oldest = static_cast<std::int64_t>(member.score) - kOldestAt;
    } else if (!member.name.empty() && member.name[0] == '#') {
      const int level = member.name[1] - '0';
      std::int64_t size = 1;
      for (int k = 0; k < level; ++k) size *= kFanout;
      nodes[member.name] = (static_cast<std::int64_t>(member.score) - kNodesAt) / 2 - size;
    } else {
      if (member.score <= 0 || member.score >= 9007199254740992.0)
        return "entry " + member.name + " has score out of range";
      entries.push_back(&member);
    }
  }
  for (std::size_t i = 1; i < entries.size(); ++i) {
    if (entries[i]->score < entries[i - 1]->score) return "entries out of time order at " + entries[i]->name;
  }
  if (!by_units) {
    if (!nodes.empty()) return "nodes in a set counted by entries";
    for (const Member* entry : entries) {
      if (unitsOf(entry->name) != 1) return "entry " + entry->name + " of other units in a set counted by entries";
    }
    return "";
  }
  if (entries.empty()) return "bookkeeping in a set without entries";
  std::int64_t sum = 0;
  std::map<std::string, std::int64_t> expected;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::int64_t x = unitsOf(entries[i]->name) - 1;
    sum += x;
    if (x == 0) continue;
    std::int64_t size = 1;
    for (int level = 1; level <= kLevels; ++level) {
      size *= kFanout;
      expected["#" + std::to_string(level) + ":" + std::to_string((oldest + static_cast<std::int64_t>(i)) / size)] += x;
    }
  }
  if (sum != extra)
    return "'#' says " + std::to_string(extra) + " extra units, the entries hold " + std::to_string(sum);
  for (auto it = expected.begin(); it != expected.end();) it = it->second == 0 ? expected.erase(it) : std::next(it);
  if (expected != nodes) {
    for (const auto& [name, x] : expected) {
      if (nodes.count(name) == 0 || nodes[name] != x) {
        return "node " + name + " should hold " + std::to_string(x) + ", holds " +
               (nodes.count(name) ? std::to_string(nodes[name]) : std::string("nothing"));
      }
    }
    for (const auto& [name, x] : nodes) {
      if (expected.count(name) == 0) return "node " + name + " holds " + std::to_string(x) + " and should not be there";
    }
  }
  return "";
}

}  // namespace swl::test
