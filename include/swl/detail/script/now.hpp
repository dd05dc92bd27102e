#pragma once
// Now as a script takes it (ARGV[4], MultiLimiter's ARGV[1]): the client's clock in microseconds, as
// text, or, on Redis's own clock, nothing or the room for the call's deadline (deadline.hpp).

#include <swl/detail/integer_text.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/detail/script/deadline.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace swl::detail {

// Scores hold times exactly only below 2^53 us, and `window` (the longest the call reads) must fit
// before now. On Redis's clock a call that `expires` carries the room for its deadline instead, '-' and
// 16 zeros, which the connection fills in as it sends the call (ScriptCall::deadlineWord): a call whose
// failure the caller may answer without Redis must not be recorded when it runs later.
class ScriptNow {
 public:
  ScriptNow(const Clock& clock, std::chrono::microseconds window, bool expires = false) {
    if (clock.isRedisTime()) {
      carries_deadline_ = expires;
      return;
    }
    const std::int64_t now = clock.now().count();
    if (now < window.count() || now >= kLargestExact) {
      throw InvalidArgument("swl: the clock reads " + std::to_string(now) +
                            " us, outside the window .. 2^53 us that scores can hold exactly");
    }
    client_now_ = std::chrono::microseconds(now);
    text_ = IntegerText(now);
  }

  // The argument: '' on Redis's clock, or the room for a deadline.
  std::string_view argument() const noexcept { return carries_deadline_ ? kNoDeadline : text_.view(); }
  // The client's clock, or none on Redis's.
  const std::optional<std::chrono::microseconds>& clientNow() const noexcept { return client_now_; }
  // Whether the argument is the room for a deadline.
  bool carriesDeadline() const noexcept { return carries_deadline_; }

 private:
  std::optional<std::chrono::microseconds> client_now_;
  IntegerText text_;
  bool carries_deadline_ = false;
};

}  // namespace swl::detail
