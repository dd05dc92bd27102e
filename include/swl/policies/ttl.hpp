#pragma once
/// \file
/// TTL policies: how long a key lives after its last write. Every write sets the expiry, so an idle key
/// disappears and no key is ever left without one.
///
/// A TtlPolicy is any copyable type with
///     std::chrono::milliseconds ttl(std::chrono::microseconds window) const;
/// The limiter refuses (InvalidArgument) a TTL shorter than the window: Redis would drop entries that
/// still count, and the limiter would admit too much.

#include <swl/error.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace swl {

/// Whether T is a TTL policy: copyable, with `std::chrono::milliseconds ttl(std::chrono::microseconds) const`.
template <class T, class = void>
struct IsTtlPolicy : std::false_type {};
/// The case where T has ttl(); its type and T's copyability decide.
template <class T>
struct IsTtlPolicy<T, std::void_t<decltype(std::declval<const T&>().ttl(std::chrono::microseconds()))>>
    : std::bool_constant<std::is_same_v<decltype(std::declval<const T&>().ttl(std::chrono::microseconds())),
                                        std::chrono::milliseconds> &&
                         std::is_copy_constructible_v<T>> {};

/// IsTtlPolicy<T>::value: what the limiters' static_asserts ask.
template <class T>
inline constexpr bool isTtlPolicy = IsTtlPolicy<T>::value;

/// Exactly the window (rounded up to Redis's millisecond): the key dies the moment its newest entry
/// leaves the window, so it never holds memory it does not need. The default.
struct WindowTtl {
  /// The expiry of a key whose window is `window`: the window, rounded up.
  std::chrono::milliseconds ttl(std::chrono::microseconds window) const {
    return std::chrono::ceil<std::chrono::milliseconds>(window);
  }
};

/// A multiple of the window: keeps a key a little longer, for operators who inspect recent history.
class WindowMultipleTtl {
 public:
  /// `multiple` windows (at least 1).
  explicit WindowMultipleTtl(int multiple) : multiple_(multiple) {
    if (multiple < 1)
      throw InvalidArgument("swl::WindowMultipleTtl: multiple " + std::to_string(multiple) + " is below 1");
  }
  /// The expiry of a key whose window is `window`: `multiple` windows.
  std::chrono::milliseconds ttl(std::chrono::microseconds window) const {
    return std::chrono::ceil<std::chrono::milliseconds>(window) * multiple_;
  }

 private:
  int multiple_;
};

/// A fixed duration, whatever the window (at least the window, as for every policy).
class FixedTtl {
 public:
  /// Every key lives `ttl` after its last write; a ttl shorter than a limiter's window is refused when it is used.
  explicit FixedTtl(std::chrono::milliseconds ttl) : ttl_(ttl) {}
  /// The expiry of every key, whatever its window.
  std::chrono::milliseconds ttl(std::chrono::microseconds) const { return ttl_; }

 private:
  std::chrono::milliseconds ttl_;
};

namespace detail {

// The TTL `policy` gives a key whose window is `window`, refused when it is shorter: Redis would drop
// entries that still count. `limiter` names who asks, for the message.
template <class TtlPolicy>
std::chrono::milliseconds checkedTtl(const TtlPolicy& policy, std::chrono::microseconds window,
                                     std::string_view limiter) {
  const std::chrono::milliseconds ttl = policy.ttl(window);
  if (ttl < window) {
    throw InvalidArgument(std::string(limiter) + ": a TTL of " + std::to_string(ttl.count()) +
                          " ms is shorter than the window of " + std::to_string(window.count()) +
                          " us; Redis would drop entries that still count");
  }
  return ttl;
}

}  // namespace detail
}  // namespace swl
