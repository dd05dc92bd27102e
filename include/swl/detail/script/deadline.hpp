#pragma once
// A call's deadline as a script takes it: in the argument that says now (ARGV[4], MultiLimiter's
// ARGV[1]), '-' and 16 digits of microseconds on Redis's clock (a negative number: the script finds it
// with one comparison); all zeros for none. The limiter lays out the room for it ('-' and 16 zeros) once, and the
// connection writes the digits in place as it sends the call, when it knows Redis's clock (detail/io/redis_clock.hpp):
// the width never changes, so a call formatted ahead of time (an event loop's) is written over, not formatted again.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace swl::detail {

inline constexpr std::size_t kDeadlineDigits = 16;
inline constexpr std::string_view kNoDeadline = "-0000000000000000";
static_assert(kNoDeadline.size() == 1 + kDeadlineDigits);

// Writes `microseconds` (0 .. 10^16 - 1, until the year 2286) as kDeadlineDigits digits at `digits`.
inline void writeDeadlineDigits(char* digits, std::int64_t microseconds) noexcept {
  for (std::size_t i = kDeadlineDigits; i-- > 0; microseconds /= 10)
    digits[i] = static_cast<char>('0' + microseconds % 10);
}

}  // namespace swl::detail
