#pragma once
// The periods' Lua (countedByPeriods: a count per period whose bounds the client sends) and the bounds a
// call sends (PeriodBounds): what PeriodicLimiter and MultiLimiter's periodic rules share.

#include <swl/decision.hpp>
#include <swl/detail/messages.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>
#include <swl/periods.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace swl::detail {

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
)lua"sv;

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

}  // namespace swl::detail
