// Prints the log's parts without I/O (SlidingWindowLog::kParts: its sums) exactly as they go into its
// scripts, after the layout whose numbers they read (kLayout), for tests/lua/test_log_sums.lua to test
// alone in plain Lua 5.1.

#include <swl/algorithms/sliding_window.hpp>

#include <cstdio>

int main() {
  for (const std::string_view part : {swl::SlidingWindowLog::kLayout, swl::SlidingWindowLog::kParts}) {
    if (std::fwrite(part.data(), 1, part.size(), stdout) != part.size()) return 1;
  }
  return 0;
}
