#pragma once
// How far a randomized test goes: a number ctest sets in the environment from the build's settings
// (tests/CMakeLists.txt), or the test's own default when the program runs alone.

#include <cstdint>
#include <cstdlib>

namespace swl::test {

// The number in environment variable `variable`, or `otherwise`.
inline std::int64_t wanted(const char* variable, std::int64_t otherwise) {
  const char* text = std::getenv(variable);
  return text != nullptr ? std::atoll(text) : otherwise;
}

}  // namespace swl::test
