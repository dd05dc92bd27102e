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
#include <swl/detail/limiter/reporting.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>

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

namespace detail {

// The Lua every periodic count runs (PeriodicLimiter's script and MultiLimiter's), after a prelude that
// defines `now`, `now_text` and `text`. Its steps are built by one function, called only where a
// periodic count is made: a Lua function costs Redis on every call that defines it, and a MultiLimiter
// of sliding rules alone needs none of them.
inline constexpr std::string_view kPeriodFunctions = R"lua(
-- Periodic windows (swl/periods.hpp): the client computes the periods (calendar days in a time zone, say)
-- and sends their bounds, 'b0 b1 b2 ...' ascending in microseconds; the script picks the one holding now
-- and counts in it. A periodic key is a hash: s and e, its period's bounds, c, the units admitted in it.
local function countedByPeriods()
  -- The period [start, end) among `bounds` that holds now; nil when none does.
  local function periodOf(bounds)
    local previous = nil
    for bound_text in string.gmatch(bounds, '%d+') do
      local bound = tonumber(bound_text)
      if previous and previous <= now and now < bound then return previous, bound end
      previous = bound
    end
    return nil
  end
  local function missed(bounds)
    return redis.error_reply('swl: now (' .. now_text .. ' us) lies in none of the periods bounded by ' .. bounds ..
                             ': the clocks of Redis and this client differ by more than a period')
  end
  -- Units admitted in [start, finish): those of another period count nothing.
  local function unitsIn(key, start, finish)
    local state = redis.call('HMGET', key, 's', 'e', 'c')
    if tonumber(state[1]) == start and tonumber(state[2]) == finish then return tonumber(state[3]) end
    return 0
  end
  -- The key lives until its period ends (relative: a client's clock may be far from Redis's).
  local function recordUnits(key, start, finish, count)
    redis.call('HSET', key, 's', text(start), 'e', text(finish), 'c', text(count))
    redis.call('PEXPIRE', key, math.ceil((finish - now) / 1000))
  end
  return {of = periodOf, missed = missed, units = unitsIn, record = recordUnits}
end
)lua";

// The bounds a periodic script chooses from, as its text. With a client clock, the period holding that
// clock's now; on Redis's clock (read only inside the script), the period holding this host's now and
// its two neighbours, so that Redis finds its own now among them unless the two clocks differ by more
// than a period. The texts of the last period are kept: making them takes time-zone lookups, and they
// change once a period. Thread-safe.
class PeriodBounds {
 public:
  explicit PeriodBounds(Periods periods) : periods_(std::move(periods)) {}

  // `client_now`: the limiter's clock, or none on Redis's clock.
  std::string textFor(std::optional<std::chrono::microseconds> client_now) const {
    static const Clock host = Clock::system();
    const std::chrono::microseconds now = client_now ? *client_now : host.now();
    // Made under the lock, once a period: the calls meanwhile would make the same texts.
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!last_ || !last_->period.holds(now)) last_ = textsAround(now);
    return client_now ? last_->current : last_->around;
  }

  const Periods& periods() const noexcept { return periods_; }

 private:
  // The period holding some instant, its bounds as text, and those of it and its two neighbours.
  struct Texts {
    Period period;
    std::string current, around;
  };

  Texts textsAround(std::chrono::microseconds now) const {
    const Period current = periods_.at(now);
    const Period previous = periods_.at(current.start - std::chrono::microseconds(1));
    const Period next = periods_.at(current.end);
    if (previous.end != current.start || next.start != current.end) {
      throw InvalidArgument("swl::Periods " + detail::quoted(periods_.name()) + ": the periods around " +
                            std::to_string(now.count()) + " us leave a gap or overlap");
    }
    return {current, numbers({current.start, current.end}),
            numbers({previous.start, current.start, current.end, next.end})};
  }

  static std::string numbers(std::initializer_list<std::chrono::microseconds> bounds) {
    std::string text;
    for (const std::chrono::microseconds bound : bounds) {
      if (!text.empty()) text += ' ';
      text += std::to_string(bound.count());
    }
    return text;
  }

  Periods periods_;
  mutable std::mutex mutex_;
  mutable std::optional<Texts> last_;
};

}  // namespace detail
}  // namespace swl
