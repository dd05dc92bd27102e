#pragma once
// PeriodicLimiter's core: a quota per period whose bounds the client computes.

#include <swl/algorithm.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/limiter/script_batch.hpp>
#include <swl/detail/script/calls.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/period_count.hpp>
#include <swl/detail/script/periods.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/options.hpp>
#include <swl/periods.hpp>
#include <swl/policies/keys.hpp>
#include <swl/redis/client.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::detail {

// PeriodicLimiter's scripts, put together as every algorithm's are (scriptOf<PeriodicWindow>(blocking)):
// the prelude, the periods' functions and the count by periods, then kScript. ARGV[1] is the periods'
// usual length (unused), ARGV[5] and ARGV[6] are unused (no members; the key expires when its period ends).
struct PeriodicWindow {
  static constexpr std::string_view kScriptName = "periodic_window";
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
};

template <class KeyPolicy = PrefixKey>
class PeriodicLimiterCore {
  static_assert(isKeyPolicy<KeyPolicy>,
                "swl::PeriodicLimiter: KeyPolicy must be copyable with std::string key(std::string_view) const "
                "(see swl/policies/keys.hpp)");
  static constexpr std::string_view kName = "swl::PeriodicLimiter";

 public:
  // `quota` units per period of `periods`.
  PeriodicLimiterCore(RedisClient& redis, std::int64_t quota, Periods periods, LimiterOptions options = {},
                      KeyPolicy keys = KeyPolicy())
      : redis_(&redis),
        limit_(checkedLimit(Limit{quota, periods.usualLength()})),
        bounds_(std::make_shared<const PeriodBounds>(std::move(periods))),
        options_(std::move(options)),
        keys_(std::move(keys)),
        block_length_(blockLength(options_.block_for, kName)) {}

  Decision decide(std::string_view key, std::int64_t cost, const Limit& limit) {
    validate(key, cost, limit);
    const Texts texts = textsFor(key, limit, cost);
    return decodeDecision(*redis_->run(callOf(texts)), limit.max_requests);
  }

  std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests) {
    return decidedInOneBatch(
        *redis_, requests, limit_,
        [this](const AcquireRequest& request, const Limit& limit) {
          validate(request.key, request.cost, limit);
          return textsFor(request.key, limit, request.cost);
        },
        [this](const Texts& texts) { return callOf(texts); });
  }

  Usage peek(std::string_view key, const Limit& limit) {
    if (key.empty()) throw InvalidArgument(std::string(kName) + "::peek: the key is empty");
    checkWindow(limit);
    const Texts texts = textsFor(key, limit, 0);
    return decodeUsage(*redis_->run(callOf(texts)), limit.max_requests);
  }

  bool reset(std::string_view key) {
    if (key.empty()) throw InvalidArgument(std::string(kName) + "::reset: the key is empty");
    return redis_->run(forgetScript(), {redisKey(key)}, {})->integer() > 0;
  }

  const Limit& limit() const noexcept { return limit_; }
  const Periods& periods() const noexcept { return bounds_->periods(); }
  const LimiterOptions& options() const noexcept { return options_; }

  void validate(std::string_view key, std::int64_t cost, const Limit& limit) const {
    checkWindow(limit);
    checkRequest(kName, "tryAcquire", key, cost, limit.max_requests);
  }

  // The Redis key that holds `key`'s count, for operators and tests.
  std::string redisKey(std::string_view key) const { return keys_.key(key); }

  static const Script& script() { return scriptOf<PeriodicWindow>(); }

 protected:
  Reporting reporting() const { return reportingOf(options_); }

 private:
  // One call's keys and arguments as text, owned while the call is in use.
  struct Texts {
    std::string redis_key, block_key;  // block_key: empty unless the limiter blocks
    IntegerText window, limit, cost;
    ScriptNow now;
    std::string bounds;
  };

  Texts textsFor(std::string_view key, const Limit& limit, std::int64_t cost) const {
    const ScriptNow now(options_.clock, limit.window);
    std::string redis_key = redisKey(key);
    std::string block_key = block_length_ ? blockKeyOf(redis_key) : std::string();
    return {std::move(redis_key),
            std::move(block_key),
            IntegerText(limit.window.count()),
            IntegerText(limit.max_requests),
            IntegerText(cost),
            now,
            bounds_->textFor(now.clientNow())};
  }

  ScriptCall callOf(const Texts& texts) const {
    const std::string_view count_rejected = options_.rejected == RejectedRequests::counted ? "1" : "0";
    const PreludeArguments prelude{texts.window, texts.limit, texts.cost, texts.now.argument(), {}, {}, count_rejected};
    std::optional<BlockArguments> block;
    if (block_length_) block = BlockArguments{texts.block_key, *block_length_};
    return preludeCall(scriptOf<PeriodicWindow>(block.has_value()), texts.redis_key, prelude, {texts.bounds}, block);
  }

  // A limit per call changes the quota; the periods, and so the window, are the limiter's own.
  void checkWindow(const Limit& limit) const {
    if (limit == limit_) return;
    checkedLimit(limit);
    if (limit.window != limit_.window) {
      throw InvalidArgument(std::string(kName) + ": a limit per call changes only the quota, but its window of " +
                            std::to_string(limit.window.count()) + " us is not the periods' own (" +
                            std::to_string(limit_.window.count()) + " us, " + detail::quoted(periods().name()) + ")");
    }
  }

  RedisClient* redis_;
  Limit limit_;
  std::shared_ptr<const PeriodBounds> bounds_;  // shared by copies: it keeps the last periods computed
  LimiterOptions options_;
  KeyPolicy keys_;
  std::optional<IntegerText> block_length_;  // LimiterOptions::block_for as text; none when it is off
};

}  // namespace swl::detail
