#pragma once
// MultiLimiter's holds (reserve, commit): the Lua that wraps its multi-window script, the holds' keys and
// the reservation ids.

#include <swl/composites/detail/multi_limiter_core.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/messages.hpp>
#include <swl/detail/script/assembly.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/error.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace swl::detail {

// The most holds in force at once on one log: releasing those that ran out is part of every decision
// on it, so their number bounds that decision's work.
inline constexpr std::int64_t kMaxHolds = 64;
// The most forgotten reservations (committed, or run out) a call removes; each call adds at most one.
inline constexpr std::int64_t kForgetPerCall = 16;

// Where a log's holds are kept: beside it, in its hash slot.
inline std::string holdsKeyOf(std::string_view redis_key) { return companionKeyOf(redis_key, ":holds"); }

inline constexpr std::string_view kHoldsOpeningText = R"lua(
-- Holds (MultiLimiter::reserve and commit). A reservation records its units in every rule's log, as a
-- decision does, and holds them there until it is committed (its entries settled to the actual units,
-- units.settle) or its hold runs out on Redis's clock (settled to 0). Each log's holds are a sorted set
-- beside it, KEYS[n + i] for rule i of n, whose members are a reservation's id after one letter:
--   'h'  a hold in force; score: when it runs out (us)
--   'c'  committed, or charged after its hold ran out; score: minus when it is forgotten
--   'x'  a hold that ran out and was released; score: minus when it is forgotten
-- An id is the units each entry was recorded with, ':' and the entries' member. Every call first releases
-- the holds of its logs that ran out: at most MAX_HOLDS are in force on a log, so that work is bounded.
-- After the rules' arguments: ARGV[holds_at + 1] what the call does: 'decide' (a decision as the
-- multi-window script makes it), 'reserve' (the same, holding what it records for ARGV[holds_at + 2] us
-- under the id ARGV[holds_at + 3]) or 'commit' (of the id ARGV[holds_at + 2], ARGV[holds_at + 3] units
-- spent). A reserve answers 0, or the rule whose holds are all taken (then refused), and the decision.
-- A commit answers {1} when it released a hold, {2} when the reservation was committed before, and
-- otherwise (unknown, or its hold ran out) {3, then the decision of its units charged as a report
-- charges them}.
)lua";
inline constexpr auto kHoldsNumbers = [] {
  LuaText<96> lua;
  lua.line("local MAX_HOLDS, FORGET = ", kMaxHolds, ", ", kForgetPerCall);
  return lua;
}();
inline constexpr std::string_view kHoldsFunctions = R"lua(local rule_count = #KEYS / 2
local hold_keys = {}
for i = 1, rule_count do
  hold_keys[i] = KEYS[rule_count + i]
  KEYS[rule_count + i] = nil  -- the decision's loop reads the logs' keys alone
end
local holds_at = 3 + 5 * rule_count
local operation = ARGV[holds_at + 1]
local function ruleWindow(i) return tonumber(ARGV[3 + 5 * (i - 1) + 2]) end

-- Rule i's holds last at least `ms` more milliseconds.
local function keepHolds(i, ms)
  if redis.call('PTTL', hold_keys[i]) < ms then redis.call('PEXPIRE', hold_keys[i], ms) end
end

-- Rule i's reservation `id` is over ('c' or 'x'): remembered for a window, so that a commit repeated
-- within it finds it.
local function forgetLater(i, letter, id)
  local window = ruleWindow(i)
  redis.call('ZADD', hold_keys[i], -(now + window), letter .. id)
  keepHolds(i, math.ceil(window / 1000))
end

-- The units and member an id names.
local function idParts(id)
  local colon = string.find(id, ':', 1, true)
  return tonumber(string.sub(id, 1, colon - 1)), string.sub(id, colon + 1)
end

-- Releases rule i's holds that ran out (each entry settled to 0 units), and forgets up to FORGET
-- reservations whose time to be remembered is over.
local function releaseRunOut(i)
  local hold_key = hold_keys[i]
  local run_out = redis.call('ZRANGEBYSCORE', hold_key, '(0', now)
  if #run_out > 0 then
    local settle = countedByUnits().changing().settle
    for _, name in ipairs(run_out) do
      local id = string.sub(name, 2)
      local units, member = idParts(id)
      redis.call('ZREM', hold_key, name)
      settle(KEYS[i], member, units, 0, ruleWindow(i))
      forgetLater(i, 'x', id)
    end
  end
  local forgotten = redis.call('ZRANGEBYSCORE', hold_key, '-' .. text(now), '(0', 'LIMIT', 0, FORGET)
  if #forgotten > 0 then redis.call('ZREM', hold_key, unpack(forgotten)) end
end

-- The decision, as the multi-window script makes it.
local function decideAll()
)lua";

inline constexpr std::string_view kHoldsClosing = R"lua(
end

for i = 1, rule_count do
  if ARGV[3 + 5 * (i - 1) + 5] == '' then releaseRunOut(i) end  -- only a log holds
end
if operation == 'decide' then return decideAll() end

if operation == 'reserve' then
  local full = nil
  for i = 1, rule_count do
    if redis.call('ZCOUNT', hold_keys[i], '(0', '+inf') >= MAX_HOLDS then
      full = i
      ARGV[3] = '-'  -- a dry run: the answer as it stands, nothing recorded
      break
    end
  end
  local answer = decideAll()
  if full then
    -- Refused until the first of that rule's holds runs out (or is committed).
    local first = redis.call('ZRANGEBYSCORE', hold_keys[full], '(0', '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    answer[1] = 0
    answer[3 * full] = math.max(answer[3 * full], tonumber(first[2]) - now)
  elseif answer[1] == 1 then
    local hold_for, id = tonumber(ARGV[holds_at + 2]), ARGV[holds_at + 3]
    for i = 1, rule_count do
      redis.call('ZADD', hold_keys[i], now + hold_for, 'h' .. id)
      keepHolds(i, math.ceil((hold_for + ruleWindow(i)) / 1000))
    end
  end
  table.insert(answer, 1, full or 0)
  return answer
end

-- A commit.
local id, actual_text = ARGV[holds_at + 2], ARGV[holds_at + 3]
local units, member = idParts(id)
local actual = tonumber(actual_text)
local held, committed = false, false
for i = 1, rule_count do
  local found = redis.call('ZMSCORE', hold_keys[i], 'h' .. id, 'c' .. id)
  held = held or found[1] ~= false
  -- remembered until its time is over, whether or not a call has removed it yet
  committed = committed or (found[2] ~= false and tonumber(found[2]) < -now)
end
if held then
  local settle = countedByUnits().changing().settle
  for i = 1, rule_count do
    if redis.call('ZREM', hold_keys[i], 'h' .. id) == 1 then settle(KEYS[i], member, units, actual, ruleWindow(i)) end
    forgetLater(i, 'c', id)
  end
  return {1}
end
if committed then return {2} end
-- Unknown, or its hold ran out: the units were spent. Charged at this call's own member, whatever they
-- find (each rule judging them under the larger of its limit and the charge), and remembered.
for i = 1, rule_count do
  redis.call('ZREM', hold_keys[i], 'x' .. id)
  forgetLater(i, 'c', id)
end
if actual == 0 then return {3} end
ARGV[3] = '1'
for i = 1, rule_count do
  local at = 3 + 5 * (i - 1)
  ARGV[at + 1] = actual_text
  if tonumber(ARGV[at + 3]) < actual then ARGV[at + 3] = actual_text end
end
local answer = decideAll()
table.insert(answer, 1, 3)
return answer
)lua";

// What a commit came to (kHoldsOpeningText): its first integer.
enum class CommitReply : std::int64_t { released = 1, committed_before = 2, charged = 3 };

// A reservation's id (kHoldsOpeningText): the units each entry holds, ':' and the entries' member.
inline std::string holdIdOf(std::int64_t units, std::string_view member) {
  return std::string(IntegerText(units)).append(":").append(member);
}

// Whether `id` is one holdIdOf makes: 1 to 19 digits that are not all 0 and do not start with 0, ':' and a
// member. Another is bad input: it could name no reservation.
inline bool isHoldId(std::string_view id) {
  const std::size_t colon = id.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 18 || colon + 1 == id.size() || id[0] == '0') {
    return false;
  }
  std::int64_t units = 0;
  const auto [end, error] = std::from_chars(id.data(), id.data() + colon, units);
  return error == std::errc() && end == id.data() + colon && units > 0;
}

}  // namespace swl::detail
