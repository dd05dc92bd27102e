#pragma once
/// \file
/// GcraLimiter: the generic cell rate algorithm: a token bucket as one time per key.
///
///   swl::GcraLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
///   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
///
/// What redis-cell and redis_rate run, and what an API gateway means by "token bucket": a full bucket
/// admits a burst of `limit` at once, then units come back one every window/limit, smoothly rather
/// than all at once when a window ends. O(1) memory per key (one short string). Over any window at most
/// the burst plus what came back in it is admitted, so a window's length can see up to twice the limit
/// around a burst (measured in docs/algorithms.md). Needs limit * window (in microseconds) below 2^53.
///
/// The script runs after the prelude in redis_limiter.hpp, which reads the arguments; everything around
/// it is RedisLimiter's. Its steps (Gcra::kFunctions) decide MultiLimiter's GCRA rules too (Rule::gcra).

#include <swl/decision.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/policies/keys.hpp>
#include <swl/redis_limiter.hpp>

#include <string_view>

namespace swl {

/// The generic cell rate algorithm (the contract in algorithm.hpp): one time per key.
struct Gcra {
  /// The limiter's name, for messages.
  static constexpr std::string_view kName = "swl::GcraLimiter";
  /// The script's name, for messages.
  static constexpr std::string_view kScriptName = "gcra";
  /// No member per request: the key keeps one time.
  static constexpr bool kRecordsMembers = false;
  /// Throws InvalidArgument when limit x window reaches 2^53 microseconds, past what Lua counts exactly;
  /// the message opens with `limiter` (a MultiLimiter names its rule).
  static void check(const Limit& limit, std::string_view limiter = kName) { detail::checkScaledExact(limit, limiter); }

  /// GCRA's steps, shared by its script below and MultiLimiter's (a rule made by Rule::gcra), which
  /// decides every rule before it records any. A decision on one key is three steps: decide reads the
  /// key and judges the cost, record moves the arrival time past the units admitted (or refused, when
  /// refusals count), answer answers. gcraSteps() builds them only where a key is decided by GCRA: a Lua
  /// function costs Redis on every call that defines it, and a MultiLimiter of logs alone needs none.
  static constexpr std::string_view kFunctions = R"lua(
-- A GCRA key is a string "tat frac limit": the theoretical arrival time, tat + frac/limit microseconds.
-- Each unit admitted moves it window/limit later (the emission interval); a request is admitted while
-- it stays at most one window ahead of now, so a full burst of `limit` fits at once and then units come
-- back evenly. frac keeps the interval exact when the window does not divide by the limit (the limiters
-- check that limit * window < 2^53). Times go to Redis through text(): Lua would print 14 digits.
local function gcraSteps()
  -- A time with a fraction of a microsecond left, rounded up: waiting less would not be enough.
  local function ceiling(at, fraction)
    if fraction > 0 then return at + 1 end
    return at
  end
  -- at + fraction/limit moved `cost` units later: the arrival time after them, and its fraction.
  local function later(at, fraction, cost, window, limit)
    local moved = fraction + cost * window
    local whole = idiv(moved, limit)
    return at + whole, moved - whole * limit
  end

  -- Step one: the key's arrival time as this call finds it, and whether `cost` units fit. Reads only, so
  -- that a caller deciding several keys can decide them all before it writes any.
  local function decide(key, window, limit, cost)
    local cell = {key = key, window = window, limit = limit, cost = cost, tat = now, frac = 0,
                  next_tat = nil, next_frac = nil, allowed = nil}
    local stored = redis.call('GET', key)
    if stored then
      local t, f, l = string.match(stored, '^(%d+) (%d+) ?(%d*)$')
      t, f = tonumber(t), tonumber(f)
      -- frac counts 1/limit microseconds of the limit it was stored under; under another one (a limit
      -- given per call changed) it is rounded up to a whole microsecond, never down.
      if t and l ~= '' and tonumber(l) ~= limit and f > 0 then t, f = t + 1, 0 end
      if t and (t > now or (t == now and f > 0)) then cell.tat, cell.frac = t, f end
    end
    cell.next_tat, cell.next_frac = later(cell.tat, cell.frac, cost, window, limit)
    cell.allowed = cell.next_tat < now + window or (cell.next_tat == now + window and cell.next_frac == 0)
    return cell
  end

  -- Step two: the arrival time moved past this request's units. The key lives until that time has
  -- passed (it then reads as a full bucket), or `ttl` milliseconds when that is longer: a MultiLimiter's
  -- TTL policy says how long each of its keys lives (GcraLimiter's script passes none, as it never did).
  local function record(cell, ttl)
    cell.tat, cell.frac = cell.next_tat, cell.next_frac
    local expiry = math.ceil((cell.tat - now) / 1000) + 1
    if ttl and ttl > expiry then expiry = ttl end
    redis.call('SET', cell.key, text(cell.tat) .. ' ' .. text(cell.frac) .. ' ' .. text(cell.limit), 'PX', expiry)
  end

  -- Step three: {allowed, remaining, retry_after, reset_after} from the arrival time as it stands.
  local function answer(cell)
    local window, limit = cell.window, cell.limit
    -- Below 0 when counted refusals pushed the arrival time past a window ahead.
    local remaining = idiv((now + window - cell.tat) * limit - cell.frac, window)
    if remaining > limit then remaining = limit end
    local reset_after = ceiling(cell.tat, cell.frac) - now
    if reset_after < 0 then reset_after = 0 end
    if cell.allowed then return {1, remaining, 0, reset_after} end
    -- The same cost fits once its arrival stays within a window of now, counted from the arrival time as
    -- it stands now: a counted refusal has just moved it, and a wait measured from before that would end
    -- in another refusal, forever.
    local next_tat, next_frac = later(cell.tat, cell.frac, cell.cost, window, limit)
    return {0, remaining, ceiling(next_tat, next_frac) - window - now, reset_after}
  end

  return {decide = decide, record = record, answer = answer}
end
)lua"sv;

  /// Its Lua, run after the prelude and kFunctions (algorithm.hpp): one key decided by GCRA's steps.
  static constexpr std::string_view kScript = R"lua(
local gcra = gcraSteps()
local cell = gcra.decide(key, window, limit, cost)
-- A rejected request writes nothing unless the caller opted into the penalty, and a peek (cost 0) never.
if record and (cell.allowed or count_rejected) then gcra.record(cell) end
return gcra.answer(cell)
)lua"sv;
};

/// A token bucket as one time per key, on Redis.
template <class KeyPolicy = PrefixKey>
using GcraLimiter = RedisLimiter<Gcra, KeyPolicy>;

}  // namespace swl
