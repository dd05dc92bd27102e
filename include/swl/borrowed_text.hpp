#pragma once
/// \file
/// BorrowedText: a view of a string the caller keeps, for the values that carry one past the call that
/// made them (a batch's AcquireRequest, a response's PolicyReport). A std::string_view there would take a
/// temporary and dangle: `AcquireRequest{makeKey(), 1}` in a vector, read after the temporary was freed,
/// sends bytes of freed memory as keys. A BorrowedText made from a temporary std::string does not compile,
/// and says why.

#include <string>
#include <string_view>
#include <type_traits>

namespace swl {

/// A view of the caller's string, as std::string_view, that a temporary std::string cannot make.
class BorrowedText {
 public:
  /// Of no text: empty.
  constexpr BorrowedText() noexcept = default;
  /// Of text the caller keeps: a view, a literal, or a string that outlives this value.
  ///@{
  constexpr BorrowedText(std::string_view text) noexcept : text_(text) {}
  constexpr BorrowedText(const char* text) noexcept : text_(text) {}
  BorrowedText(const std::string& text) noexcept : text_(text) {}
  ///@}
  /// Refused: a temporary string is freed at the end of its statement, before the view is read.
  template <class Temporary,
            std::enable_if_t<std::is_same_v<Temporary, std::string> && !std::is_lvalue_reference_v<Temporary>, int> = 0>
  BorrowedText(Temporary&&) {
    static_assert(!std::is_same_v<Temporary, std::string>,
                  "swl: this value views its text, and a temporary std::string is freed at the end of the "
                  "statement: keep the string in a variable that outlives the value (or pass a std::string_view)");
  }

  /// The text, viewed.
  constexpr operator std::string_view() const noexcept { return text_; }
  /// The text, viewed.
  constexpr std::string_view view() const noexcept { return text_; }
  /// Whether the text is empty.
  constexpr bool empty() const noexcept { return text_.empty(); }
  /// How many bytes the text has.
  constexpr std::size_t size() const noexcept { return text_.size(); }

  /// Equal when the texts are.
  friend constexpr bool operator==(BorrowedText a, std::string_view b) noexcept { return a.text_ == b; }
  /// Unequal when the texts are.
  friend constexpr bool operator!=(BorrowedText a, std::string_view b) noexcept { return a.text_ != b; }

 private:
  std::string_view text_;
};

}  // namespace swl
