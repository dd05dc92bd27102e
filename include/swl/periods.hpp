#pragma once
/// \file
/// Periods: fixed windows whose bounds are not multiples of one length, such as calendar days in a time
/// zone (23, 24 or 25 hours long) or calendar months. A PeriodicLimiter (periodic_limiter.hpp) counts in
/// them, and so can a MultiLimiter rule. The client computes the bounds, the script only counts: Lua in
/// Redis has no time-zone rules, and every client with the same zone data computes the same bounds.
///
/// Periods are a function of time: the period that holds an instant. swl/calendar.hpp makes calendar
/// periods (swl::calendar component); any other cut of time is a Periods too.

#include <swl/decision.hpp>
#include <swl/detail/messages.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/error.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace swl {

/// One period: from `start` (included) to `end` (excluded), in microseconds since the epoch.
struct Period {
  /// Its first microsecond since the epoch.
  std::chrono::microseconds start{0};
  /// The microsecond after its last, since the epoch.
  std::chrono::microseconds end{0};

  /// Whether `instant` falls in it.
  bool holds(std::chrono::microseconds instant) const noexcept { return start <= instant && instant < end; }
};

/// How time is cut into periods: the period holding any instant, a name for messages ("1 day in
/// Europe/Berlin"), and the usual length of one, which decisions report as their Limit::window (a day
/// is 24 h though some are 23 or 25).
class Periods {
 public:
  /// Gives the period that holds an instant (microseconds since the epoch).
  using PeriodAt = std::function<Period(std::chrono::microseconds)>;

  /// Periods cut by `period_at`; an empty function or a usual length not above 0 is an
  /// InvalidArgument.
  Periods(std::string name, std::chrono::microseconds usual_length, PeriodAt period_at)
      : name_(std::move(name)), usual_length_(usual_length), period_at_(std::move(period_at)) {
    if (!period_at_) throw InvalidArgument("swl::Periods " + detail::quoted(name_) + ": no function gives its periods");
    if (usual_length_.count() <= 0) {
      throw InvalidArgument("swl::Periods " + detail::quoted(name_) + ": a usual length of " +
                            std::to_string(usual_length_.count()) + " us is not positive");
    }
  }

  /// The period holding `instant`; a period that does not hold it, or is empty, is an InvalidArgument.
  Period at(std::chrono::microseconds instant) const {
    const Period period = period_at_(instant);
    if (!period.holds(instant) || period.start.count() < 0 || period.end.count() >= detail::kLargestExact) {
      throw InvalidArgument("swl::Periods " + detail::quoted(name_) + ": the period it gives for " +
                            std::to_string(instant.count()) + " us, [" + std::to_string(period.start.count()) + ", " +
                            std::to_string(period.end.count()) +
                            ") us, does not hold that instant (or lies outside 0..2^53 us)");
    }
    return period;
  }

  /// The name messages give the periods ("1 day in Europe/Berlin").
  const std::string& name() const noexcept { return name_; }
  /// The usual length of one period, which decisions report as their Limit::window.
  std::chrono::microseconds usualLength() const noexcept { return usual_length_; }

 private:
  std::string name_;
  std::chrono::microseconds usual_length_;
  PeriodAt period_at_;
};

}  // namespace swl
