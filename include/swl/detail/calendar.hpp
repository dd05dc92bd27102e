#pragma once
// Calendar periods (days, weeks, months in a time zone), cut with the date library: what calendar.hpp's
// CalendarPeriods answers with.

#include <swl/error.hpp>
#include <swl/periods.hpp>

#include <date/date.h>
#include <date/tz.h>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace swl::detail {

enum class CalendarUnit { day, week, month };

inline std::int64_t floorDivide(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
}

// Every `count` `unit`s of local time in `zone`, counted from the epoch.
class CalendarCut {
 public:
  CalendarCut(CalendarUnit unit, int count, const date::time_zone* zone) : unit_(unit), count_(count), zone_(zone) {}

  Period operator()(std::chrono::microseconds instant) const {
    const date::local_days day =
        date::floor<date::days>(zone_->to_local(date::sys_time<std::chrono::microseconds>(instant)));
    const date::local_days first = firstDayOfPeriod(day);
    return {startOf(first), startOf(firstDayAfter(first))};
  }

 private:
  // 1970-01-05, the first Monday after the epoch, so that weeks run from Monday to Sunday as ISO weeks do.
  static constexpr std::int64_t kFirstMonday = 4;

  date::local_days firstDayOfPeriod(date::local_days day) const {
    const std::int64_t number = day.time_since_epoch().count();
    switch (unit_) {
      case CalendarUnit::day:
        return date::local_days(date::days(floorDivide(number, count_) * count_));
      case CalendarUnit::week:
        return date::local_days(date::days(floorDivide(number - kFirstMonday, 7 * count_) * 7 * count_ + kFirstMonday));
      case CalendarUnit::month: {
        const date::year_month_day date(day);
        return firstOfMonth(floorDivide(monthNumber(date), count_) * count_);
      }
    }
    return day;
  }

  date::local_days firstDayAfter(date::local_days first) const {
    switch (unit_) {
      case CalendarUnit::day:
        return first + date::days(count_);
      case CalendarUnit::week:
        return first + date::days(7 * count_);
      case CalendarUnit::month: {
        return firstOfMonth(monthNumber(date::year_month_day(first)) + count_);
      }
    }
    return first;
  }

  // Months since January 1970 (signed: a month before it is negative).
  static std::int64_t monthNumber(const date::year_month_day& date) {
    return (std::int64_t{static_cast<int>(date.year())} - 1970) * 12 +
           std::int64_t{static_cast<unsigned>(date.month())} - 1;
  }

  // The first day of the month `month` months after January 1970.
  static date::local_days firstOfMonth(std::int64_t month) {
    const std::int64_t year = 1970 + floorDivide(month, 12);
    const unsigned month_of_year = static_cast<unsigned>(month - floorDivide(month, 12) * 12) + 1;
    return date::local_days(date::year(static_cast<int>(year)) / date::month(month_of_year) / date::day(1));
  }

  // The first instant of a local day: its midnight, or, when the clocks skip midnight, the change itself
  // (to_sys gives the change for a local time that does not exist); a midnight that comes twice, the first.
  std::chrono::microseconds startOf(date::local_days day) const {
    const auto start = zone_->to_sys(date::local_seconds(day.time_since_epoch()), date::choose::earliest);
    return std::chrono::duration_cast<std::chrono::microseconds>(start.time_since_epoch());
  }

  CalendarUnit unit_;
  int count_;
  const date::time_zone* zone_;
};

inline const date::time_zone* calendarZone(std::string_view zone) {
  try {
    return date::locate_zone(std::string(zone));
  } catch (const std::exception& error) {
    throw InvalidArgument("swl::CalendarPeriods: unknown time zone " + detail::quoted(zone) + " (" + error.what() +
                          "); give an IANA name such as \"Europe/Berlin\"");
  }
}

inline Periods calendarPeriods(CalendarUnit unit, int count, std::string_view zone, std::string_view unit_name,
                               std::chrono::microseconds unit_length) {
  constexpr int kMostPeriods = 1000;  // keeps every period well inside the years the zone data knows
  if (count < 1 || count > kMostPeriods) {
    throw InvalidArgument("swl::CalendarPeriods: " + std::to_string(count) + " " + std::string(unit_name) +
                          "s per period is not in 1.." + std::to_string(kMostPeriods));
  }
  const date::time_zone* time_zone = calendarZone(zone);
  std::string name = std::to_string(count) + " " + std::string(unit_name) + (count == 1 ? "" : "s") + " in " +
                     std::string(time_zone->name());
  return Periods(std::move(name), unit_length * count, CalendarCut(unit, count, time_zone));
}

}  // namespace swl::detail
