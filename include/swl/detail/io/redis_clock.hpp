#pragma once
// Redis's clock as one connection knows it, to carry a call's deadline to Redis in Redis's own time
// (detail/script/deadline.hpp). Learned from the replies to TIME, each read against the local steady
// clock when it came: Redis read its clock before the reply left, so (Redis's time - the local time the
// reply came) is at most the true offset, and less by at most that round trip. A deadline carried on it
// is early by up to a round trip, never late: a call that runs past it was given up by its client. TIME
// goes out with the handshake and again, ahead of a call, once the last reading is older than kFresh,
// so that the two clocks' drift (and a step of Redis's) is caught within a second. No I/O here.

#include <swl/detail/script/deadline.hpp>
#include <swl/redis/client.hpp>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace swl::detail {

class RedisClock {
 public:
  using Local = std::chrono::steady_clock;
  // How long one reading serves before TIME is asked again.
  static constexpr Local::duration kFresh = std::chrono::seconds(1);

  // TIME's reply, which came at `received`: {seconds, microseconds}, as text. Anything else is ignored.
  void observe(ReplyView time, Local::time_point received) {
    if (time.size() != 2) return;
    const std::optional<std::int64_t> seconds = number(time[0].text()), micros = number(time[1].text());
    if (!seconds || !micros) return;
    const std::int64_t redis_now = *seconds * 1'000'000 + *micros;
    offset_ = redis_now - microsecondsOf(received);
    read_at_ = received;
  }

  // Forgets what it knew (a new connection may reach another server).
  void forget() noexcept { offset_.reset(); }

  bool known() const noexcept { return offset_.has_value(); }
  // Whether TIME should go out again before the next call that carries a deadline.
  bool stale(Local::time_point now) const noexcept { return !offset_ || now - read_at_ >= kFresh; }

  // Writes `deadline`, on Redis's clock, over the digits of a deadline's room (after its '-'); the room
  // stays all zeros (no deadline) while the clock is not known.
  void writeDeadline(char* digits, Local::time_point deadline) const noexcept {
    if (offset_) writeDeadlineDigits(digits, microsecondsOf(deadline) + *offset_);
  }

 private:
  static std::int64_t microsecondsOf(Local::time_point at) noexcept {
    return std::chrono::duration_cast<std::chrono::microseconds>(at.time_since_epoch()).count();
  }
  static std::optional<std::int64_t> number(std::string_view text) noexcept {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
    return value;
  }

  std::optional<std::int64_t> offset_;  // Redis's microseconds minus the local steady clock's
  Local::time_point read_at_{};
};

}  // namespace swl::detail
