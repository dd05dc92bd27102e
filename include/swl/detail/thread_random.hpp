#pragma once
// Random numbers for members and for the choice of a shard: a xoshiro256** generator per thread (cheap
// on the hot path, no lock shared), seeded from the OS. <random>'s engines would serve as well, at 0.2 s
// more of every compile that includes swl. A forked child reseeds, or it would draw what its parent draws.

#include <atomic>
#include <chrono>
#include <cstdint>

#include <pthread.h>
#include <sys/random.h>

namespace swl::detail {

// 64 bits from the OS; should it fail (a kernel without getrandom), the clock and an address, which a
// generator's seeding then spreads.
inline std::uint64_t entropy() noexcept {
  std::uint64_t bits = 0;
  if (getrandom(&bits, sizeof bits, 0) == static_cast<ssize_t>(sizeof bits)) return bits;
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
         reinterpret_cast<std::uintptr_t>(&bits);
}

// How many forks this process descends through: a generator seeded under another count reseeds.
inline std::atomic<std::uint64_t>& forkGeneration() noexcept {
  static std::atomic<std::uint64_t> generation{0};
  return generation;
}

class ThreadRandom {
 public:
  std::uint64_t operator()() noexcept {
    const std::uint64_t generation = forkGeneration().load(std::memory_order_relaxed);
    if (generation != seeded_in_) seed(generation);
    const std::uint64_t result = rotated(state_[1] * 5, 7) * 9;
    const std::uint64_t shifted = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= shifted;
    state_[3] = rotated(state_[3], 45);
    return result;
  }

  // A number in [0, bound), bound > 0: the modulo's bias (bound / 2^64) is far below anything measurable.
  std::uint64_t below(std::uint64_t bound) noexcept { return (*this)() % bound; }

 private:
  static std::uint64_t rotated(std::uint64_t bits, int by) noexcept { return (bits << by) | (bits >> (64 - by)); }

  // xoshiro's authors seed its four words from splitmix64.
  void seed(std::uint64_t generation) noexcept {
    std::uint64_t mix = entropy();
    for (std::uint64_t& word : state_) {
      mix += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = mix;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      word = z ^ (z >> 31);
    }
    seeded_in_ = generation;
  }

  std::uint64_t state_[4]{};
  std::uint64_t seeded_in_ = ~std::uint64_t{0};
};

inline ThreadRandom& threadRandom() noexcept {
  static const int watching_forks =
      pthread_atfork(nullptr, nullptr, [] { forkGeneration().fetch_add(1, std::memory_order_relaxed); });
  static_cast<void>(watching_forks);
  thread_local ThreadRandom random;
  return random;
}

}  // namespace swl::detail
