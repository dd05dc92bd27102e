#pragma once
// Reads a sliding window log's sorted set whole and checks that its bookkeeping agrees with its entries:
// the layout algorithms/sliding_window.hpp describes. Tests call it after traces, so that a sum the
// script keeps wrong shows even where no decision has yet read it.

#include <swl/redis/connection.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace swl::test {

// The units an entry of a log holds, from its member: '*' or '+' (settled) and a big-endian double, then
// the request's member; a member alone holds one unit.
inline std::int64_t unitsOfEntry(const std::string& name) {
  if (name.empty() || (name[0] != '*' && name[0] != '+')) return 1;
  std::uint64_t bits = 0;
  for (std::size_t i = 1; i < 9; ++i) bits = (bits << 8) | static_cast<unsigned char>(name[i]);
  double units;
  std::memcpy(&units, &bits, sizeof units);
  return static_cast<std::int64_t>(units);
}

// The first disagreement between `redis_key`'s entries and its bookkeeping, or "" when there is none.
inline std::string logLayoutProblem(swl::Connection& connection, const std::string& redis_key) {
  constexpr std::int64_t kTimesEnd = 9007199254740992;
  const std::int64_t sizes[] = {16, 256, 4096, 65536};
  constexpr int kLevels = 4;
  struct Member {
    std::string name;
    double score;
  };
  // The set in pages: a reply holds at most 65,536 elements (swl's reader refuses more).
  std::vector<Member> members;
  for (long first = 0;; first += 10'000) {
    const std::string from = std::to_string(first), to = std::to_string(first + 9'999);
    const swl::Reply page = connection.command({"ZRANGE", redis_key, from, to, "WITHSCORES"});
    for (std::size_t i = 0; i + 1 < page->size(); i += 2) {
      members.push_back({std::string((*page)[i].text()), std::stod(std::string((*page)[i + 1].text()))});
    }
    if (page->size() < 20'000) break;
  }
  std::vector<Member> entries;
  std::map<std::string, std::int64_t> nodes;  // "k:j" -> recorded extra
  std::vector<std::int64_t> book;
  bool marked = false;
  // Big-endian doubles, as the script packs them.
  const auto doubleAt = [](const std::string& bytes, std::size_t at) {
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<unsigned char>(bytes[at + i]);
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return static_cast<std::int64_t>(value);
  };
  const auto unitsOf = [&](const std::string& name) -> std::int64_t {
    if (!name.empty() && (name[0] == '*' || name[0] == '+')) return doubleAt(name, 1);
    const std::size_t mark = name.find_last_of("*=");
    return mark == std::string::npos ? 1 : std::stoll(name.substr(mark + 1));
  };
  for (const Member& member : members) {
    if (member.name == "!") {
      if (member.score != 0) return "the mark has score " + std::to_string(member.score);
      marked = true;
    } else if (member.name.size() == 17 && member.name[0] == '#' && member.score > 0) {
      const int level = 1 + static_cast<int>((member.score - static_cast<double>(kTimesEnd)) / (std::int64_t{1} << 50));
      const std::int64_t index = doubleAt(member.name, 9);
      if (member.score != static_cast<double>(kTimesEnd + (std::int64_t{1} << 50) * (level - 1) + 2 * index)) {
        return "node " + std::to_string(level) + ":" + std::to_string(index) + " at the wrong score";
      }
      nodes[std::to_string(level) + ":" + std::to_string(index)] = doubleAt(member.name, 1);
    } else if ((member.name.size() == 113 || member.name.size() == 105) && member.name[0] == '#' && member.score < 0) {
      // 14 doubles; 13 as 0.3 wrote it, without N
      if (!book.empty()) return "two bookkeeping members";
      for (std::size_t at = 1; at < member.name.size(); at += 8) book.push_back(doubleAt(member.name, at));
      if (member.score != static_cast<double>(-1 - book[4])) return "the bookkeeping member is not at -1 - G";
      book.erase(book.begin() + 4);  // G
    } else {
      if (member.score <= 0 || member.score >= static_cast<double>(kTimesEnd))
        return "entry " + member.name + " out of range";
      entries.push_back(member);
    }
  }
  for (std::size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].score < entries[i - 1].score) return "entries out of time order at " + entries[i].name;
  }
  if (book.empty()) {
    if (!nodes.empty()) return "nodes in a set counted by entries";
    for (const Member& entry : entries) {
      if (unitsOf(entry.name) != 1) return "entry " + entry.name + " of other units in a set counted by entries";
    }
    return "";
  }
  if (marked) return "the mark '!' in a set counted by units";
  if (entries.empty()) return "bookkeeping in a set without entries";
  const std::int64_t extra = book[0], oldest = book[1], newest = book[2], kept = book[3];
  const std::int64_t next = oldest + static_cast<std::int64_t>(entries.size());
  if (book.size() == 13 && book[12] != next) {
    return "N says the next entry is " + std::to_string(book[12]) + ", the entries end before " + std::to_string(next);
  }
  if (newest != static_cast<std::int64_t>(entries.back().score))
    return "the bookkeeping's newest time is not the newest";
  if (kept % sizes[kLevels - 1] != 0) return "T is not a multiple of 65536";
  std::int64_t sum = 0;
  std::map<std::string, std::int64_t> present;  // extra of the present entries, per node
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::int64_t x = unitsOf(entries[i].name) - 1;
    sum += x;
    for (int k = 0; k < kLevels; ++k) {
      present[std::to_string(k + 1) + ":" + std::to_string((oldest + static_cast<std::int64_t>(i)) / sizes[k])] += x;
    }
  }
  if (sum != extra) return "E says " + std::to_string(extra) + " extra units, the entries hold " + std::to_string(sum);
  for (int k = 0; k < kLevels; ++k) {
    const std::int64_t first = oldest / sizes[k], last = (next - 1) / sizes[k];
    for (std::int64_t index = first; index <= last; ++index) {
      const std::string name = std::to_string(k + 1) + ":" + std::to_string(index);
      if (index < last && index >= kept / sizes[k] && nodes.count(name) == 0) return "node " + name + " is not kept";
      if (index == last && nodes.count(name) != 0) return "node " + name + " is kept while it is the newest";
      const std::int64_t recorded = index == last ? book[4 + k] : (nodes.count(name) ? nodes[name] : 0);
      const std::int64_t left = index == first ? book[8 + k] : 0;  // the part that left the set
      if (recorded - left != present[name]) {
        return "node " + name + " records " + std::to_string(recorded) + " less " + std::to_string(left) +
               " that left, its present entries hold " + std::to_string(present[name]);
      }
    }
  }
  for (const auto& [name, x] : nodes) {
    if (present.count(name) == 0) return "node " + name + " covers no entry in the set";
  }
  return "";
}

}  // namespace swl::test
