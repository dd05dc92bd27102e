#pragma once
// Texts joined into one at compile time: a Lua part long enough to be written in several headers is still
// one std::string_view where the algorithm contract takes one.

#include <array>
#include <cstddef>
#include <string_view>

namespace swl::detail {

template <const std::string_view&... kTexts>
struct JoinedText {
  static constexpr std::array<char, (kTexts.size() + ...)> kChars = [] {
    std::array<char, (kTexts.size() + ...)> joined{};
    std::size_t at = 0;
    for (const std::string_view text : {kTexts...}) {
      for (const char c : text) joined[at++] = c;
    }
    return joined;
  }();
  static constexpr std::string_view kText{kChars.data(), kChars.size()};
};

// joinedText<a, b>: the text of a, then b's; each names a constexpr std::string_view at namespace scope.
template <const std::string_view&... kTexts>
inline constexpr std::string_view joinedText = JoinedText<kTexts...>::kText;

}  // namespace swl::detail
