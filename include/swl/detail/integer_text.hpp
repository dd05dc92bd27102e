#pragma once
// Decimal text of an integer without touching the heap: every number swl sends to Redis goes through it.

#include <charconv>
#include <cstdint>
#include <string_view>

namespace swl::detail {

class IntegerText {
 public:
  IntegerText() noexcept = default;  // empty, until a number is assigned
  explicit IntegerText(std::int64_t value) noexcept {
    length_ = static_cast<std::size_t>(std::to_chars(digits_, digits_ + sizeof digits_, value).ptr - digits_);
  }
  std::string_view view() const noexcept { return {digits_, length_}; }
  operator std::string_view() const noexcept { return view(); }

 private:
  char digits_[24];
  std::size_t length_ = 0;
};

}  // namespace swl::detail

namespace swl::detail {

// Decimal text of a compile-time integer, as a constant: a template argument sent to a script.
constexpr std::size_t decimalLength(unsigned value) {
  std::size_t length = 1;
  for (; value >= 10; value /= 10) ++length;
  return length;
}

template <unsigned Value>
struct DecimalDigits {
  char digits[decimalLength(Value)];
};

template <unsigned Value>
constexpr DecimalDigits<Value> decimalDigits() {
  DecimalDigits<Value> text{};
  unsigned rest = Value;
  for (std::size_t i = decimalLength(Value); i-- > 0; rest /= 10) text.digits[i] = static_cast<char>('0' + rest % 10);
  return text;
}

template <unsigned Value>
inline constexpr DecimalDigits<Value> kDecimalDigits = decimalDigits<Value>();

template <unsigned Value>
inline constexpr std::string_view kDecimalText{kDecimalDigits<Value>.digits, decimalLength(Value)};

}  // namespace swl::detail
