// A consumer of swl::calendar: computes a calendar day in a time zone through the installed component.
#include <swl/calendar.hpp>

#include <chrono>
#include <iostream>

int main() {
  using namespace std::chrono_literals;
  // 30 March 2025 in Berlin: the clocks go forward, so the day lasts 23 hours.
  const swl::Period day = swl::CalendarPeriods::days(1, "Europe/Berlin").at(std::chrono::seconds(1743336000));
  std::cout << "calendar consumer ok: a day of "
            << std::chrono::duration_cast<std::chrono::hours>(day.end - day.start).count() << " hours\n";
  return day.end - day.start == 23h ? 0 : 1;
}
