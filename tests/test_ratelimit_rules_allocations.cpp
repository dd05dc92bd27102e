// swl-ratelimit's rule tree finds a rule without allocating: the one test of a program whose every
// allocation is counted (operator new replaced). Built where no sanitizer replaces the allocator itself
// (tests/CMakeLists.txt): ASan takes the replaced operators' frees for a mismatch.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/rule_tree.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <vector>

// Every allocation of this program is counted, to show that finding a rule makes none.
namespace {
std::atomic<std::size_t> allocations{0};
}  // namespace

// GCC takes the malloc and free that the replaced operators pair for a mismatch, wherever it inlines them.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t size) {
  ++allocations;
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

using swl::ratelimit::DescriptorEntry;
using swl::ratelimit::Domain;

namespace {

Domain parse(const std::string& yaml) { return swl::ratelimit::parseDomain(yaml, "test.yaml"); }

}  // namespace

TEST_CASE("finding a rule allocates nothing") {
  std::string yaml = "domain: d\ndescriptors:\n";
  for (int i = 0; i < 1000; ++i) {
    yaml += "  - {key: user, value: u" + std::to_string(i) + ", rate_limit: {unit: second, requests_per_unit: 1}}\n";
    yaml += "  - {key: path, value: \"/api/" + std::to_string(i) + "/*/action\", rate_limit: {unit: second}}\n";
  }
  yaml += "  - {key: user, rate_limit: {unit: second, requests_per_unit: 2}}\n";
  const Domain domain = parse(yaml);
  const std::vector<std::vector<DescriptorEntry>> descriptors{
      {{"user", "u500"}}, {{"user", "someone"}}, {{"path", "/api/999/users/action"}}, {{"path", "/nowhere"}}, {}};
  const std::size_t before = allocations.load();
  std::size_t found = 0;
  const auto start = std::chrono::steady_clock::now();
  constexpr int kRounds = 20'000;
  for (int round = 0; round < kRounds; ++round) {
    for (const auto& descriptor : descriptors) found += domain.rules.find(descriptor) != nullptr ? 1 : 0;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(allocations.load() == before);
  CHECK(found == 3 * kRounds);
  std::cout << "find: " << std::chrono::duration<double, std::nano>(took).count() / (kRounds * descriptors.size())
            << " ns a descriptor, among 2001 rules (1000 patterns of one key)\n";
}
