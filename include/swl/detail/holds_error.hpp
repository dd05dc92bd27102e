#pragma once
// Whether a caught error is of a kind, asked where only its std::exception_ptr is kept (a batch's outcome,
// a failure a tier answered for).

#include <exception>

namespace swl::detail {

// `error` (not null) holds an E or an error derived from E.
template <class E>
bool holdsError(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace swl::detail
