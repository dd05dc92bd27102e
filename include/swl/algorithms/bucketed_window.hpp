#pragma once
/// \file
/// BucketedWindowLimiter: a sliding window in at most B buckets per key, for large limits (70,000 a day).
///
///   swl::BucketedWindowLimiter<> limiter(connection, swl::Limit{70'000, std::chrono::hours(24)});
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// The log keeps one entry per admitted request: exact, but a key's memory grows with its limit. This
/// window keeps a key's units in buckets of width w = ceil(window / (B - 1)) on the time axis instead, so
/// a key holds at most B buckets (one small hash, a few hundred bytes) whatever the limit.
///
/// It never over-admits. A request counts from the moment it is admitted until its bucket's end plus the
/// window: never less than the exact window would count it, at most w longer. So
///   - it refuses everything the exact sliding window (the log) would refuse, and
///   - it admits everything a sliding window of length window + w would admit:
/// it under-admits by at most one bucket's width of window, w / (window + w), which is 1/B of the rate
/// when B - 1 divides the window. retry_after and reset_after are exact for that rule (the least wait
/// after which the same cost fits; when the key empties).
///
/// The script runs after the prelude in redis_limiter.hpp, which reads the arguments (B travels as
/// ARGV[8]); everything around it is RedisLimiter's. Reservations (settle) need the log's one entry per
/// request: use SlidingWindowLimiter for those.

#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/policies/keys.hpp>
#include <swl/redis_limiter.hpp>

#include <chrono>
#include <optional>
#include <string_view>

namespace swl {

/// The bucketed sliding window (the contract in algorithm.hpp): B buckets per key whatever the limit.
template <unsigned Buckets = 64>
struct BucketedWindow {
  static_assert(Buckets >= 2 && Buckets <= 120,
                "swl::BucketedWindow<Buckets>: Buckets must be in 2..120, so that a key stays one compact hash "
                "(Redis keeps hashes of up to 128 fields, hash-max-listpack-entries, as one listpack)");

  /// The limiter's name, for messages.
  static constexpr std::string_view kName = "swl::BucketedWindowLimiter";
  /// The script's name, for messages.
  static constexpr std::string_view kScriptName = "bucketed_window";
  /// No member per request: a bucket keeps only its units.
  static constexpr bool kRecordsMembers = false;
  /// B, sent to the script as ARGV[8] with every call.
  std::string_view argument(const std::optional<std::chrono::microseconds>& /*client_now*/) const noexcept {
    return detail::kDecimalText<Buckets>;
  }
  /// Any limit: the buckets hold units, so every limit is kept as it is.
  static void check(const Limit&) {}

  /// The width of one bucket: a request counts at most this much longer than the window.
  static constexpr std::chrono::microseconds bucketWidth(std::chrono::microseconds window) {
    return std::chrono::microseconds((window.count() + Buckets - 2) / (Buckets - 1));
  }

  /// Its Lua, run after the prelude (algorithm.hpp).
  static constexpr std::string_view kScript = R"lua(
-- KEYS[1] is a hash: field k (decimal) = the units admitted in bucket k, the microseconds
-- [k * width, (k + 1) * width); 's' = the units of every bucket held; 'o' = no bucket below it
-- is held; 'n' = the newest bucket held. A bucket counts until its end plus the window.
local buckets = tonumber(ARGV[8])
local width = idiv(window + buckets - 2, buckets - 1)
local current = idiv(now, width)
local first_live = idiv(now - window, width)  -- buckets before it ended a window ago: they slid out

-- The buckets held from `from` to `to`, oldest first, as names and units. On one clock that is at
-- most B buckets; clocks that disagree by more than a window can spread them wider, and then the
-- hash's own fields (a few B at most) are listed instead of the range.
local function bucketsIn(from, to)
  local names = {}
  if to - from < 2 * buckets then
    for k = from, to do names[#names + 1] = text(k) end
  else
    local numbers = {}
    for _, field in ipairs(redis.call('HKEYS', key)) do
      local k = tonumber(field)
      if k and k >= from and k <= to then numbers[#numbers + 1] = k end
    end
    table.sort(numbers)
    for i = 1, #numbers do names[i] = text(numbers[i]) end
  end
  if #names == 0 then return names, {} end
  local units = redis.call('HMGET', key, unpack(names))
  for i = 1, #units do units[i] = tonumber(units[i]) or 0 end
  return names, units
end

local state = redis.call('HMGET', key, 'o', 'n', 's', text(current), 'w')
local oldest, newest = tonumber(state[1]), tonumber(state[2])
local count = tonumber(state[3]) or 0
local in_current = tonumber(state[4]) or 0
-- Buckets of another width (the key's window changed with a limit given per call) cannot be read as
-- these: the key starts afresh. Buckets as wide (a window a few us longer or shorter) mean the same
-- times: they keep counting, under the new window.
local other_width = state[5] and tonumber(state[5]) ~= width

local stale = {}  -- names of the buckets that slid out
local all_gone = newest ~= nil and (newest < first_live or other_width)
if all_gone then
  count, in_current, oldest, newest = 0, 0, nil, nil
elseif oldest ~= nil and oldest < first_live then
  local units
  stale, units = bucketsIn(oldest, first_live - 1)
  for i = 1, #units do count = count - units[i] end
  oldest = first_live
end

local allowed = count + cost <= limit
if record and (allowed or count_rejected) then
  -- Growing writes come first (Redis over maxmemory refuses a script's first write that may grow
  -- memory, before anything changed); removals after. Only a key whose every bucket slid out is
  -- deleted first: nothing in it counts any more.
  if all_gone then redis.call('DEL', key) end
  count = count + cost
  oldest = math.min(oldest or current, current)
  newest = math.max(newest or current, current)
  redis.call('HSET', key, text(current), text(in_current + cost), 's', text(count), 'o', text(oldest),
             'n', text(newest), 'w', text(width))
  if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
  local lives_for = (newest + 1) * width + window - now
  redis.call('PEXPIRE', key, math.max(tonumber(ARGV[6] or 0), math.ceil(lives_for / 1000)))
elseif all_gone then
  redis.call('DEL', key)
elseif #stale > 0 then
  redis.call('HDEL', key, unpack(stale))
  redis.call('HSET', key, 's', text(count), 'o', text(oldest))
end

local remaining = limit - count  -- below 0 when counted refusals filled the window past the limit
local reset_after = 0
if count > 0 then reset_after = (newest + 1) * width + window - now end
if allowed then return {1, remaining, 0, reset_after} end

-- The least wait: the oldest buckets leave first, each at its end plus the window.
local needed = count + cost - limit
local names, units = bucketsIn(math.max(oldest, first_live), newest)
local freed = 0
for i = 1, #names do
  freed = freed + units[i]
  if freed >= needed then return {0, remaining, (tonumber(names[i]) + 1) * width + window - now, reset_after} end
end
return redis.error_reply('swl bucketed_window: the buckets of ' .. key .. ' do not add up to their sum')
)lua"sv;
};

/// A sliding window in at most B buckets per key, for large limits.
template <unsigned Buckets = 64, class KeyPolicy = PrefixKey>
using BucketedWindowLimiter = RedisLimiter<BucketedWindow<Buckets>, KeyPolicy>;

}  // namespace swl
