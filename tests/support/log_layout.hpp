#pragma once
// Checks that a sliding window log's bookkeeping agrees with its entries, through the log's own check
// (the check_log script: every sum recomputed from the entries). Tests call it after traces, so that a
// sum the script keeps wrong shows even where no decision has yet read it.

#include <swl/algorithms/sliding_window.hpp>
#include <swl/redis/connection.hpp>

#include <cstdint>
#include <cstring>
#include <string>

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
  try {
    connection.run(swl::detail::logCheckScript(), {redis_key}, {});
    return "";
  } catch (const swl::ReplyError& error) {
    return error.what();
  }
}

}  // namespace swl::test
