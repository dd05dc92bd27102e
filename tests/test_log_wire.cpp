// The log's wire format (swl/detail/script/wire.hpp) is written once: the Lua the library sends and the
// module's C++ read it from there, so a change of layout is one change. This reads the sources of both for
// the layout's values written out anywhere else, and the scripts for the lines made from it.

#include <swl/algorithms/sliding_window_log.hpp>
#include <swl/composites/multi_limiter.hpp>
#include <swl/detail/script/assembly.hpp>
#include <swl/detail/script/wire.hpp>

#include "support/files.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

namespace wire = swl::detail::wire;

// The log's Lua, as written in C++, and the C++ that reads or names its layout.
const std::vector<std::string> kLuaSources{"include/swl/algorithms/detail/sliding_window_log/layout.hpp",
                                           "include/swl/algorithms/detail/sliding_window_log/sums.hpp",
                                           "include/swl/algorithms/detail/sliding_window_log/counted_by_units.hpp",
                                           "include/swl/algorithms/detail/sliding_window_log/phases.hpp",
                                           "include/swl/algorithms/detail/sliding_window_log/check.hpp",
                                           "include/swl/algorithms/sliding_window_log.hpp",
                                           "include/swl/composites/detail/multi_limiter_core.hpp",
                                           "include/swl/detail/script/assembly.hpp"};
const std::vector<std::string> kModuleSources{
    "module/log/arguments.hpp", "module/log/decision.hpp",     "module/log/layout.hpp",       "module/log/reads.hpp",
    "module/log/request.hpp",   "module/log/set.hpp",          "module/log/sums.hpp",         "module/log/units.hpp",
    "module/log/window.hpp",    "module/redis/sorted_set.hpp", "module/redis/swl_native.cpp", "module/redis/words.hpp"};
const std::vector<std::string> kClientSources{"include/swl/detail/io/native_module.hpp", "include/swl/redis/client.hpp",
                                              "include/swl/composites/multi_limiter.hpp"};

// Which of `literals` `file` (under the source tree) writes.
std::vector<std::string> strays(const std::string& file, const std::vector<std::string>& literals) {
  const std::string text = swl::test::readFile(std::string(SWL_SOURCE_DIR) + "/" + file);
  std::vector<std::string> found;
  for (const std::string& literal : literals) {
    if (text.find(literal) != std::string::npos) found.push_back(literal);
  }
  return found;
}

}  // namespace

TEST_CASE("the log's layout is written only in its wire format: no stray literal of it in the Lua or the module") {
  // Values of the layout, and the ways the Lua and C++ would spell its bytes and names.
  const std::vector<std::string> values{
      "9007199254740992", "1125899906842624", "10133099161583616", ">ddd",    "[*=]",      "{16, 256", "121",
      "\"SWL.DECIDE",     "\"swl.decide",     "\"LAYOUT",          "'LAYOUT", "\"EXPIRED", "'EXPIRED", "LAYOUT swl",
      "EXPIRED swl"};
  const std::vector<std::string> lua_bytes{"'!'", "'#'",     "'*'",       "'+'",       "'@'",
                                           "')'", "= 16, 8", "NEAR = 16", "LEVELS = 4"};
  const std::vector<std::string> module_bytes{"'!'", "'#'", "'*'",     "'+'",      "'@'",
                                              "')'", "'='", "1 << 53", "kTrim = ", "kFanout = "};
  for (const std::string& file : kLuaSources) {
    INFO(file);
    CHECK(strays(file, values) == std::vector<std::string>());
    CHECK(strays(file, lua_bytes) == std::vector<std::string>());
  }
  for (const std::string& file : kModuleSources) {
    INFO(file);
    CHECK(strays(file, values) == std::vector<std::string>());
    CHECK(strays(file, module_bytes) == std::vector<std::string>());
  }
  for (const std::string& file : kClientSources) {
    INFO(file);
    CHECK(strays(file, values) == std::vector<std::string>());
  }
}

TEST_CASE("the scripts carry the wire format's numbers, and read their arguments where it puts them") {
  const std::string log(swl::detail::scriptOf<swl::SlidingWindowLog>().text());
  CHECK(log.find(std::string(wire::luaLayoutConstants().view())) != std::string::npos);
  CHECK(log.find(std::string(wire::luaSumsConstants().view())) != std::string::npos);
  CHECK(log.find(std::string(wire::luaNodeBands().view())) != std::string::npos);
  CHECK(log.find(std::string(wire::luaNear().view())) != std::string::npos);
  CHECK(log.find(std::string(wire::kExpiredError) + " swl: the call ran") != std::string::npos);
  const auto reads = [](const std::string& name, int place) {
    return " = " + name + "ARGV[" + std::to_string(place) + "]";
  };
  const std::string prelude(swl::detail::kOneKeyArguments);
  CHECK(prelude.find("local window = tonumber(ARGV[" + std::to_string(wire::kWindowArgument) + "])") !=
        std::string::npos);
  CHECK(prelude.find("local limit = tonumber(ARGV[" + std::to_string(wire::kLimitArgument) + "])") !=
        std::string::npos);
  CHECK(prelude.find("local cost = tonumber(ARGV[" + std::to_string(wire::kCostArgument) + "] or 1)") !=
        std::string::npos);
  CHECK(prelude.find(reads("", wire::kNowArgument)) != std::string::npos);  // now_text
  CHECK(prelude.find("ARGV[" + std::to_string(wire::kCountRejectedArgument) + "] == '1'") != std::string::npos);
  CHECK(log.find("member = ARGV[" + std::to_string(wire::kMemberArgument) + "]") != std::string::npos);
  CHECK(log.find("tonumber(ARGV[" + std::to_string(wire::kTtlArgument) + "])") != std::string::npos);
  const std::string multi(swl::detail::kMultiWindowArguments);
  CHECK(multi.find(reads("", wire::kMultiNowArgument)) != std::string::npos);
  const std::string multi_script(swl::detail::kMultiWindowScript);
  CHECK(multi_script.find("local at = " + std::to_string(wire::kSharedMultiArguments) + " + " +
                          std::to_string(wire::kMultiArgumentsPerRule) + " * (i - 1)") != std::string::npos);
  CHECK(multi_script.find("ARGV[" + std::to_string(wire::kMultiRecordingArgument) + "] ~= '-'") != std::string::npos);
  CHECK(multi_script.find("ARGV[at + " + std::to_string(wire::kRuleCostArgument) + "]") != std::string::npos);
  CHECK(multi_script.find("ARGV[at + " + std::to_string(wire::kRuleWindowArgument) + "]") != std::string::npos);
  CHECK(multi_script.find("ARGV[at + " + std::to_string(wire::kRuleLimitArgument) + "]") != std::string::npos);
  CHECK(multi_script.find("ARGV[at + " + std::to_string(wire::kRuleTtlArgument) + "]") != std::string::npos);
  CHECK(multi_script.find("ARGV[at + " + std::to_string(wire::kRuleCountingArgument) + "]") != std::string::npos);
}
