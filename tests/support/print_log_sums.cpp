// Prints the log's parts without I/O (SlidingWindowLog::kParts: its sums) exactly as they go into its
// scripts, for tests/lua/test_log_sums.lua to test alone in plain Lua 5.1.

#include <swl/algorithms/sliding_window.hpp>

#include <cstdio>

int main() {
  const std::string_view parts = swl::SlidingWindowLog::kParts;
  return std::fwrite(parts.data(), 1, parts.size(), stdout) == parts.size() ? 0 : 1;
}
