#pragma once
// PeriodicLimiter's core: RedisLimiter's, over an algorithm that counts by periods whose bounds the
// client computes.

#include <swl/decision.hpp>
#include <swl/detail/limiter/redis_core.hpp>
#include <swl/detail/messages.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/period_count.hpp>
#include <swl/detail/script/periods.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>
#include <swl/periods.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/client.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace swl::detail {

// PeriodicLimiter's algorithm: a count per period, whose bounds the client computes from its periods
// and sends with each call (the algorithm's argument, ARGV[8]). Its scripts are put together as every
// algorithm's are: the prelude, the periods' functions and the count by periods, then kScript. ARGV[1]
// is the periods' usual length (unused); ARGV[5] and ARGV[6] are unused (no members; the key expires
// when its period ends).
class PeriodicWindow {
 public:
  static constexpr std::string_view kName = "swl::PeriodicLimiter";
  static constexpr std::string_view kScriptName = "periodic_window";
  static constexpr bool kRecordsMembers = false;
  static constexpr std::array<std::string_view, 2> kFunctions{kPeriodFunctions, kPeriodCount};
  static constexpr std::string_view kScript = R"lua(
-- ARGV[8]  the bounds of the periods around the client's now, 'b0 b1 ...' (kPeriodFunctions)
local periods = countedByPeriods()
local start, finish = periods.of(ARGV[8])
if not start then return periods.missed(ARGV[8]) end
local answer, counted = decideByCount(periods.units(key, start, finish), finish - now)
if counted then periods.record(key, start, finish, counted) end
return answer
)lua"sv;

  explicit PeriodicWindow(Periods periods) : bounds_(std::make_shared<const PeriodBounds>(std::move(periods))) {}

  // A limit per call changes the quota; the periods, and so the window, are the limiter's own.
  void check(const Limit& limit) const {
    const std::chrono::microseconds window = periods().usualLength();
    if (limit.window != window) {
      throw InvalidArgument(std::string(kName) + ": a limit per call changes only the quota, but its window of " +
                            std::to_string(limit.window.count()) + " us is not the periods' own (" +
                            std::to_string(window.count()) + " us, " + detail::quoted(periods().name()) + ")");
    }
  }

  // The bounds of the periods around the client's now (or the host's, on Redis's clock).
  std::string argument(const std::optional<std::chrono::microseconds>& client_now) const {
    return bounds_->textFor(client_now);
  }

  const Periods& periods() const noexcept { return bounds_->periods(); }

 private:
  std::shared_ptr<const PeriodBounds> bounds_;  // shared by copies: it keeps the last periods computed
};

// RedisLimiter's core over the periods: only its constructor and periods() are its own.
template <class KeyPolicy = PrefixKey>
class PeriodicLimiterCore : public RedisLimiterCore<PeriodicWindow, KeyPolicy> {
 public:
  // `quota` units per period of `periods`.
  PeriodicLimiterCore(RedisClient& redis, std::int64_t quota, Periods periods, LimiterOptions options = {},
                      KeyPolicy keys = KeyPolicy())
      : PeriodicLimiterCore(redis, quota, PeriodicWindow(std::move(periods)), std::move(options), std::move(keys)) {}

  const Periods& periods() const noexcept { return this->calls_.algorithm().periods(); }

 private:
  // `window` is copied (its periods are shared), not moved: the limit reads it too, and the order in which
  // arguments are made is unspecified.
  PeriodicLimiterCore(RedisClient& redis, std::int64_t quota, const PeriodicWindow& window, LimiterOptions options,
                      KeyPolicy keys)
      : RedisLimiterCore<PeriodicWindow, KeyPolicy>(redis, Limit{quota, window.periods().usualLength()},
                                                    std::move(options), std::move(keys), CompactMember(), WindowTtl(),
                                                    window) {}
};

}  // namespace swl::detail
