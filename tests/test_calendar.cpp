// Calendar quotas (swl/calendar.hpp, swl/periodic_limiter.hpp): calendar periods are checked against
// bounds worked out by hand from each zone's rules (days across the clock changes of a northern and a
// southern zone, a midnight the clocks skip, month ends of 28 to 31 days, a leap February, a year end),
// and every decision against an exact model on random traces with a manual clock: a count per period of
// that hand-made table.

#include <swl/calendar.hpp>
#include <swl/swl.hpp>

#include "support/manual_time.hpp"
#include "support/redis_server.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using swl::test::ManualTime;
using swl::test::RedisServer;

namespace {

// A UTC time written out, as microseconds since the epoch (glibc's timegm: no time zone involved).
std::chrono::microseconds utc(int year, int month, int day, int hour = 0, int minute = 0) {
  std::tm fields{};
  fields.tm_year = year - 1900;
  fields.tm_mon = month - 1;
  fields.tm_mday = day;
  fields.tm_hour = hour;
  fields.tm_min = minute;
  return std::chrono::seconds(timegm(&fields));
}

// Each period of `bounds` (consecutive starts, then the last end) is what `periods` gives at its start,
// in its middle and just before its end.
void checkPeriods(const swl::Periods& periods, const std::vector<std::chrono::microseconds>& bounds) {
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
    const swl::Period expected{bounds[i], bounds[i + 1]};
    for (const std::chrono::microseconds at :
         {bounds[i], bounds[i] + (bounds[i + 1] - bounds[i]) / 2, bounds[i + 1] - 1us}) {
      INFO(periods.name() << ", period " << i << " at " << at.count() << " us");
      const swl::Period period = periods.at(at);
      CHECK(period.start == expected.start);
      CHECK(period.end == expected.end);
    }
  }
}

// The exact model: a count per period of a hand-made table of bounds.
class QuotaModel {
 public:
  explicit QuotaModel(std::vector<std::chrono::microseconds> bounds) : bounds_(std::move(bounds)) {}

  swl::Decision decide(std::chrono::microseconds now, std::int64_t cost, std::int64_t limit, bool count_rejected) {
    const std::size_t period = periodOf(now);
    std::int64_t& count = counts_[period];
    const bool allowed = count + cost <= limit;
    if (cost > 0 && (allowed || count_rejected)) count += cost;
    const std::chrono::microseconds ends_in = bounds_[period + 1] - now;
    swl::Decision decision;
    decision.allowed = allowed;
    decision.limit = limit;
    decision.remaining = std::max<std::int64_t>(0, limit - count);
    decision.retry_after = allowed ? 0us : ends_in;
    decision.reset_after = count > 0 ? ends_in : 0us;
    return decision;
  }

  std::chrono::microseconds first() const { return bounds_.front(); }
  std::chrono::microseconds last() const { return bounds_.back(); }

 private:
  std::size_t periodOf(std::chrono::microseconds now) const {
    for (std::size_t i = 0; i + 1 < bounds_.size(); ++i) {
      if (bounds_[i] <= now && now < bounds_[i + 1]) return i;
    }
    FAIL("the trace left the model's table at " << now.count() << " us");
    return 0;
  }

  std::vector<std::chrono::microseconds> bounds_;
  std::map<std::size_t, std::int64_t> counts_;
};

// Berlin's days around both of its 2025 clock changes: 23 hours on 30 March (CET to CEST at 01:00 UTC),
// 25 hours on 26 October (back at 01:00 UTC).
const std::vector<std::chrono::microseconds> kBerlinDays = {
    utc(2025, 3, 28, 23),  utc(2025, 3, 29, 23),  utc(2025, 3, 30, 22),  utc(2025, 3, 31, 22),
    utc(2025, 10, 24, 22), utc(2025, 10, 25, 22), utc(2025, 10, 26, 23), utc(2025, 10, 27, 23)};
// Sydney's: 25 hours on 6 April (AEDT to AEST at 16:00 UTC the day before), 23 on 5 October.
const std::vector<std::chrono::microseconds> kSydneyDays = {
    utc(2025, 4, 4, 13),  utc(2025, 4, 5, 13),  utc(2025, 4, 6, 14),  utc(2025, 4, 7, 14),
    utc(2025, 10, 3, 14), utc(2025, 10, 4, 14), utc(2025, 10, 5, 13), utc(2025, 10, 6, 13)};

// The table as consecutive periods: a gap (between the spring and autumn runs above) splits it in two.
std::vector<std::vector<std::chrono::microseconds>> runsOf(const std::vector<std::chrono::microseconds>& days) {
  return {{days.begin(), days.begin() + 4}, {days.begin() + 4, days.end()}};
}

}  // namespace

TEST_CASE("calendar days run from local midnight to local midnight, 23 or 25 hours on the days the clocks change") {
  const swl::Periods berlin = swl::CalendarPeriods::days(1, "Europe/Berlin");
  const swl::Periods sydney = swl::CalendarPeriods::days(1, "Australia/Sydney");
  for (const auto& run : runsOf(kBerlinDays)) checkPeriods(berlin, run);
  for (const auto& run : runsOf(kSydneyDays)) checkPeriods(sydney, run);
  CHECK(berlin.at(utc(2025, 3, 30, 12)).end - berlin.at(utc(2025, 3, 30, 12)).start == 23h);
  CHECK(berlin.at(utc(2025, 10, 26, 12)).end - berlin.at(utc(2025, 10, 26, 12)).start == 25h);
  CHECK(sydney.at(utc(2025, 4, 6, 0)).end - sydney.at(utc(2025, 4, 6, 0)).start == 25h);
  CHECK(sydney.at(utc(2025, 10, 5, 0)).end - sydney.at(utc(2025, 10, 5, 0)).start == 23h);
  CHECK(berlin.name() == "1 day in Europe/Berlin");
  CHECK(berlin.usualLength() == 24h);

  // Santiago moves its clocks at midnight: on 7 September 2025 local time jumps from 00:00 (-04) to 01:00
  // (-03), so that day starts at 01:00, 04:00 UTC, and lasts 23 hours.
  checkPeriods(swl::CalendarPeriods::days(1, "America/Santiago"),
               {utc(2025, 9, 5, 4), utc(2025, 9, 6, 4), utc(2025, 9, 7, 4), utc(2025, 9, 8, 3), utc(2025, 9, 9, 3)});
  // Several days count from the epoch in local time: in UTC, days(3) start on day numbers divisible by 3
  // (31 December 2024 is day 20,088).
  checkPeriods(swl::CalendarPeriods::days(3, "UTC"), {utc(2024, 12, 31), utc(2025, 1, 3), utc(2025, 1, 6)});
}

TEST_CASE("calendar weeks are ISO weeks, from Monday's local midnight") {
  // 24 March 2025 is a Monday; Berlin's clocks change on Sunday 30 March, so that week is 167 hours.
  checkPeriods(swl::CalendarPeriods::weeks(1, "Europe/Berlin"),
               {utc(2025, 3, 16, 23), utc(2025, 3, 23, 23), utc(2025, 3, 30, 22), utc(2025, 4, 6, 22)});
  // A week across the year end: Monday 29 December 2025 to Monday 5 January 2026.
  checkPeriods(swl::CalendarPeriods::weeks(1, "UTC"), {utc(2025, 12, 29), utc(2026, 1, 5)});
}

TEST_CASE("calendar months end on the 28th to the 31st, leap Februaries included, and months(12) are years") {
  const swl::Periods months = swl::CalendarPeriods::months(1, "America/New_York");
  // EST is UTC-5, EDT (from 9 March 2025, 10 March 2024) UTC-4.
  checkPeriods(months, {utc(2024, 1, 1, 5), utc(2024, 2, 1, 5), utc(2024, 3, 1, 5), utc(2024, 4, 1, 4)});
  checkPeriods(months, {utc(2025, 1, 1, 5), utc(2025, 2, 1, 5), utc(2025, 3, 1, 5), utc(2025, 4, 1, 4),
                        utc(2025, 5, 1, 4), utc(2025, 6, 1, 4)});
  checkPeriods(months, {utc(2025, 11, 1, 4), utc(2025, 12, 1, 5), utc(2026, 1, 1, 5), utc(2026, 2, 1, 5)});
  CHECK(months.at(utc(2024, 2, 15)).end - months.at(utc(2024, 2, 15)).start == 29 * 24h);
  CHECK(months.at(utc(2025, 2, 15)).end - months.at(utc(2025, 2, 15)).start == 28 * 24h);
  // Quarters and years in Tokyo (UTC+9, no clock changes).
  checkPeriods(
      swl::CalendarPeriods::months(3, "Asia/Tokyo"),
      {utc(2024, 12, 31, 15), utc(2025, 3, 31, 15), utc(2025, 6, 30, 15), utc(2025, 9, 30, 15), utc(2025, 12, 31, 15)});
  checkPeriods(swl::CalendarPeriods::months(12, "Asia/Tokyo"),
               {utc(2023, 12, 31, 15), utc(2024, 12, 31, 15), utc(2025, 12, 31, 15)});
}

TEST_CASE("bad calendar input is an InvalidArgument naming the problem") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_AS(swl::CalendarPeriods::days(1, "Europe/Atlantis"), swl::InvalidArgument);
  CHECK_THROWS_WITH(swl::CalendarPeriods::days(1, "Europe/Atlantis"), Contains("unknown time zone 'Europe/Atlantis'"));
  CHECK_THROWS_WITH(swl::CalendarPeriods::months(0, "UTC"), Contains("0 months per period is not in 1..1000"));
  CHECK_THROWS_WITH(swl::CalendarPeriods::weeks(-2, "UTC"), Contains("-2 weeks per period"));

  RedisServer server;
  swl::Connection connection = server.connect();
  CHECK_THROWS_WITH(swl::CalendarLimiter<>(connection, 0, swl::CalendarPeriods::days(1, "UTC")),
                    Contains("max_requests 0"));
  swl::CalendarLimiter<> limiter(connection, 10, swl::CalendarPeriods::days(1, "UTC"));
  CHECK_THROWS_WITH(limiter.tryAcquire("k", 11), Contains("cost 11 exceeds the limit of 10"));
  CHECK_THROWS_WITH(limiter.tryAcquire("k", 1, swl::Limit{5, 1h}),
                    Contains("changes only the quota, but its window of 3600000000 us is not the periods' own") &&
                        Contains("1 day in UTC"));
  CHECK(limiter.tryAcquire("k", 1, swl::Limit{5, 24h}).remaining == 4);
  // A period function that gives a period not holding the instant asked about is refused, not used.
  const swl::Periods broken("broken", 1h, [](std::chrono::microseconds at) { return swl::Period{at + 1s, at + 2s}; });
  CHECK_THROWS_AS(swl::PeriodicLimiter<>(connection, 5, broken).tryAcquire("k"), swl::InvalidArgument);
}

TEST_CASE("a calendar quota decides as an exact model of its periods does, across clock changes, on random traces") {
  struct Case {
    const char* zone;
    swl::Periods periods;
    std::vector<std::chrono::microseconds> bounds;
  };
  std::vector<Case> cases;
  for (const auto& run : runsOf(kBerlinDays))
    cases.push_back({"Europe/Berlin", swl::CalendarPeriods::days(1, "Europe/Berlin"), run});
  for (const auto& run : runsOf(kSydneyDays))
    cases.push_back({"Australia/Sydney", swl::CalendarPeriods::days(1, "Australia/Sydney"), run});
  cases.push_back(
      {"America/New_York",
       swl::CalendarPeriods::months(1, "America/New_York"),
       {utc(2024, 1, 1, 5), utc(2024, 2, 1, 5), utc(2024, 3, 1, 5), utc(2024, 4, 1, 4), utc(2024, 5, 1, 4)}});
  cases.push_back({"America/New_York",
                   swl::CalendarPeriods::months(1, "America/New_York"),
                   {utc(2025, 11, 1, 4), utc(2025, 12, 1, 5), utc(2026, 1, 1, 5), utc(2026, 2, 1, 5)}});

  std::mt19937_64 random(20261125);
  for (const bool counted : {false, true}) {
    for (Case& one : cases) {
      ManualTime time;
      time.options.rejected = counted ? swl::RejectedRequests::counted : swl::RejectedRequests::not_counted;
      const std::int64_t quota = 40;
      swl::CalendarLimiter<> limiter(time.connection, quota, one.periods, time.options);
      QuotaModel model(one.bounds);
      const std::chrono::microseconds span = model.last() - model.first();
      // About 300 calls per run of periods, so that each period sees its quota spent and refused.
      const std::int64_t step = span.count() / 150;
      std::chrono::microseconds now = model.first();
      for (int call = 0; now < model.last() - 1us; ++call) {
        time.clock.set(now);
        const std::int64_t cost = std::uniform_int_distribution<std::int64_t>(0, 4)(random) == 0
                                      ? std::uniform_int_distribution<std::int64_t>(1, quota)(random)
                                      : std::uniform_int_distribution<std::int64_t>(1, 3)(random);
        const bool own_limit = std::uniform_int_distribution<int>(0, 3)(random) != 0;
        const swl::Limit limit = own_limit ? limiter.limit() : swl::Limit{quota / 2, limiter.limit().window};
        const std::int64_t asked = std::min(cost, limit.max_requests);
        INFO(one.zone << ", call " << call << " at " << now.count() << " us, cost " << asked << " under "
                      << limit.max_requests << (counted ? ", refusals counted" : ""));
        const swl::Decision expected = model.decide(now, asked, limit.max_requests, counted);
        const swl::Decision decision = limiter.tryAcquire("tenant", asked, limit);
        REQUIRE(decision.allowed == expected.allowed);
        REQUIRE(decision.remaining == expected.remaining);
        REQUIRE(decision.retry_after == expected.retry_after);
        REQUIRE(decision.reset_after == expected.reset_after);
        REQUIRE(decision.limit == limit.max_requests);
        // A peek records nothing and agrees with the model.
        if (call % 7 == 0) {
          const swl::Decision seen = model.decide(now, 0, quota, counted);
          const swl::Usage usage = limiter.peek("tenant");
          REQUIRE(usage.remaining == seen.remaining);
          REQUIRE(usage.reset_after == seen.reset_after);
        }
        now += std::chrono::microseconds(std::uniform_int_distribution<std::int64_t>(0, 2 * step)(random));
      }
    }
  }
}

TEST_CASE("a calendar quota refuses until local midnight, its key expires then, and reset, peek and batches work") {
  ManualTime time;
  // 22:30 in Berlin on 29 March 2025 (CET): the day ends at 23:00 UTC.
  time.clock.set(utc(2025, 3, 29, 21, 30));
  swl::CalendarLimiter<> limiter(time.connection, 3, swl::CalendarPeriods::days(1, "Europe/Berlin"), time.options);
  CHECK(limiter.tryAcquire("user:1", 2).allowed);
  const swl::Decision refused = limiter.tryAcquire("user:1", 2);
  CHECK_FALSE(refused.allowed);
  CHECK(refused.remaining == 1);
  CHECK(refused.retry_after == 90min);
  CHECK(refused.reset_after == 90min);
  CHECK(refused.limit == 3);
  CHECK(limiter.limit().window == 24h);
  // The key holds one small hash and lives until the period ends.
  const long long ttl_ms = time.connection.command({"PTTL", limiter.redisKey("user:1")})->integer();
  CHECK(ttl_ms > 90 * 60 * 1000 - 1000);
  CHECK(ttl_ms <= 90 * 60 * 1000);

  const std::vector<swl::Outcome> batch =
      limiter.tryAcquireMany({{"user:1", 1}, {"user:1", 1}, {"user:2", 3}, {"", 1}});
  CHECK(batch[0].decision.allowed);
  CHECK_FALSE(batch[1].decision.allowed);
  CHECK(batch[2].decision.allowed);
  CHECK_THROWS_AS(batch[3].value(), swl::InvalidArgument);
  CHECK(limiter.peek("user:1").used == 3);

  // At local midnight (the clocks go forward later that night) a new day begins.
  time.clock.set(utc(2025, 3, 29, 23));
  const swl::Decision next_day = limiter.tryAcquire("user:1", 3);
  CHECK(next_day.allowed);
  CHECK(next_day.reset_after == 23h);
  CHECK(limiter.reset("user:1"));
  CHECK_FALSE(limiter.reset("user:1"));
  CHECK(limiter.peek("user:1").used == 0);
}

TEST_CASE("a calendar quota on Redis's clock counts in the period holding Redis's now") {
  RedisServer server;
  swl::Connection connection = server.connect();
  const swl::Periods hours("1 hour", 1h, [](std::chrono::microseconds at) {
    const std::chrono::microseconds start = std::chrono::floor<std::chrono::hours>(at);
    return swl::Period{start, start + 1h};
  });
  swl::PeriodicLimiter<> limiter(connection, 2, hours);
  const auto host_now = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch());
  };
  // In an hour's last 10 s the two calls could fall in two hours: then start in the next one.
  while (host_now() % 1h > 3590s) std::this_thread::sleep_for(100ms);
  const std::chrono::microseconds before = host_now();
  CHECK(limiter.tryAcquire("k", 2).allowed);
  const swl::Decision refused = limiter.tryAcquire("k");
  const std::chrono::microseconds after = host_now();
  CHECK_FALSE(refused.allowed);
  const std::chrono::microseconds hour_end = hours.at(before).end;
  CHECK(refused.retry_after <= hour_end - before);
  CHECK(refused.retry_after >= hour_end - after - 50ms);  // Redis's clock is this host's

  // Bounds that miss Redis's now (a client clock off by more than a period) are an error reply naming it.
  CHECK_THROWS_WITH(connection.run(swl::PeriodicLimiter<>::script(), {"k"},
                                   {"60000000", "2", "1", "", "", "", "0", "1000 2000 3000 4000"}),
                    Catch::Matchers::Contains("differ by more than a period"));
}

TEST_CASE("a MultiLimiter decides a sliding rule and a calendar rule together, all or nothing") {
  ManualTime time;
  time.clock.set(utc(2025, 10, 26, 21));  // 22:00 in Berlin on its 25-hour day: the day ends at 23:00 UTC
  swl::MultiLimiter<> limiter(
      time.connection, {{"minute", swl::Limit{3, 1min}}, {"day", 5, swl::CalendarPeriods::days(1, "Europe/Berlin")}},
      time.options);
  CHECK(limiter.limit(1) == swl::Limit{5, 24h});
  int admitted = 0;
  for (int call = 0; call < 4; ++call) admitted += limiter.tryAcquire({"u", "u"}).decision.allowed ? 1 : 0;
  CHECK(admitted == 3);  // the minute binds
  time.clock.advance(2min);
  CHECK(limiter.tryAcquire({"u", "u"}).decision.allowed);
  CHECK(limiter.tryAcquire({"u", "u"}).decision.allowed);
  const swl::MultiDecision refused = limiter.tryAcquire({"u", "u"});
  CHECK_FALSE(refused.decision.allowed);
  CHECK(refused.binding_name == "day");
  CHECK(refused.decision.retry_after == 2h - 2min);
  CHECK(refused.rules[0].allowed);  // the minute had room, but nothing was recorded in it
  CHECK(refused.rules[0].remaining == 1);
  CHECK_THROWS_WITH(limiter.tryAcquire({"u", "u"}, 1, {swl::Limit{3, 1min}, swl::Limit{9, 1h}}),
                    Catch::Matchers::Contains("periodic rule 'day' changes only its quota"));
  // A plan with a bigger day admits more in the same day.
  const swl::MultiDecision bigger_day = limiter.tryAcquire({"u", "u"}, 1, {swl::Limit{3, 1min}, swl::Limit{6, 24h}});
  CHECK(bigger_day.decision.allowed);
  CHECK(bigger_day.rules[0].remaining == 0);

  // After local midnight the day starts afresh.
  time.clock.set(utc(2025, 10, 26, 23));
  const swl::MultiDecision next_day = limiter.tryAcquire({"u", "u"});
  CHECK(next_day.decision.allowed);
  CHECK(next_day.rules[1].remaining == 4);
  CHECK(next_day.rules[1].reset_after == 24h);
}
