#pragma once
// Decimal text of an integer without touching the heap: every number swl sends to Redis goes through it.

#include <charconv>
#include <cstdint>
#include <string_view>

namespace swl::detail {

class IntegerText {
 public:
  explicit IntegerText(std::int64_t value) noexcept {
    length_ = static_cast<std::size_t>(std::to_chars(digits_, digits_ + sizeof digits_, value).ptr - digits_);
  }
  std::string_view view() const noexcept { return {digits_, length_}; }
  operator std::string_view() const noexcept { return view(); }

 private:
  char digits_[24];
  std::size_t length_;
};

}  // namespace swl::detail
