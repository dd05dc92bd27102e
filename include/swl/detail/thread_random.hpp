#pragma once
// A random engine per thread, seeded from the OS: cheap to draw from on the hot path, no lock shared.

#include <random>

namespace swl::detail {

inline std::mt19937_64& threadRandom() {
  thread_local std::mt19937_64 random = [] {
    std::random_device entropy;
    std::seed_seq seed{entropy(), entropy(), entropy(), entropy()};
    return std::mt19937_64(seed);
  }();
  return random;
}

}  // namespace swl::detail
