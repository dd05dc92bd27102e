// Prints the log's parts without I/O (SlidingWindowLog::kParts: its sums) exactly as they go into its
// scripts, after the layout whose numbers they read (kLayout), for tests/lua/test_log_sums.lua to test
// alone in plain Lua 5.1.

#include <swl/algorithms/sliding_window.hpp>

#include <cstdio>
#include <string>

int main() {
  const std::string text =
      swl::detail::wholePart(swl::SlidingWindowLog::kLayout) + swl::detail::wholePart(swl::SlidingWindowLog::kParts);
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}
