#pragma once
/// \file
/// Calendar quotas: periods that are calendar days, ISO weeks or months in an IANA time zone, for a
/// PeriodicLimiter (CalendarLimiter below) or a MultiLimiter rule. Needs the swl::calendar CMake component:
/// Howard Hinnant's date library (Debian libhowardhinnant-date-dev), the library C++20's `<chrono>` time
/// zones were standardised from, reading the system's zone data (Debian tzdata). The rest of swl does
/// without it.
///
///   swl::CalendarLimiter<> daily(connection, 10'000, swl::CalendarPeriods::days(1, "Europe/Berlin"));
///   swl::CalendarLimiter<> monthly(connection, 1'000'000, swl::CalendarPeriods::months(1, "America/New_York"));
///
/// A day runs from local midnight to the next local midnight, so it lasts 23 or 25 hours on the days the
/// clocks change; where a change skips midnight itself, the day starts at the first instant it has. N
/// periods count from the epoch in local time: days(7) are the weeks from Thursday 1970-01-01, weeks(1)
/// are ISO weeks (Monday to Sunday), months(3) are quarters (January, April, July, October) and
/// months(12) are calendar years.

#include <swl/detail/calendar.hpp>
#include <swl/error.hpp>
#include <swl/periodic_limiter.hpp>
#include <swl/periods.hpp>
#include <swl/policies/keys.hpp>

#include <date/date.h>
#include <date/tz.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace swl {

/// Calendar periods in an IANA time zone ("Europe/Berlin", "America/New_York", "UTC"). An unknown zone,
/// or a count outside 1..1000, is an InvalidArgument.
struct CalendarPeriods {
  /// From local midnight, `count` days long.
  static Periods days(int count, std::string_view zone) {
    return detail::calendarPeriods(detail::CalendarUnit::day, count, zone, "day", std::chrono::hours(24));
  }
  /// From Monday's local midnight, `count` weeks long.
  static Periods weeks(int count, std::string_view zone) {
    return detail::calendarPeriods(detail::CalendarUnit::week, count, zone, "week", std::chrono::hours(24 * 7));
  }
  /// From the first of a month's local midnight, `count` months long; a usual length of 30 days each.
  static Periods months(int count, std::string_view zone) {
    return detail::calendarPeriods(detail::CalendarUnit::month, count, zone, "month", std::chrono::hours(24 * 30));
  }
};

/// A quota per calendar period: a PeriodicLimiter (periodic_limiter.hpp) over CalendarPeriods.
template <class KeyPolicy = PrefixKey>
using CalendarLimiter = PeriodicLimiter<KeyPolicy>;

}  // namespace swl
