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
// Forgotten commits (past their window) go on one commit in kForgetEvery (of Redis's microseconds), at
// most kForgetPerCall at once: each commit adds one, so they go faster than they come.
inline constexpr std::int64_t kForgetPerCall = 32;
inline constexpr std::int64_t kForgetEvery = 4;

// Where a log's holds are kept: beside it, in its hash slot.
inline std::string holdsKeyOf(std::string_view redis_key) { return companionKeyOf(redis_key, ":holds"); }

inline constexpr std::string_view kHoldsOpeningText = R"lua(
-- Holds (MultiLimiter::reserve and commit). A reservation records its units in every rule's log, as a
-- decision does, and holds them there until it is committed (its entries settled to the actual units,
-- units.settle) or its hold runs out on Redis's clock (settled to 0). Each log's holds are a sorted set
-- beside it, KEYS[n + i] for rule i of n, of reservation ids: a hold in force scores when it runs out
-- (us, above 0); a committed reservation scores minus when it is forgotten (a window after its commit).
-- An id is the units each entry was recorded with, ':' and the entries' member. Every call first releases
-- the holds of its logs that ran out: at most MAX_HOLDS are in force on a log, so that work is bounded.
-- After the rules' arguments (rule i's window is ARGV[5i], its limit ARGV[5i + 1], how it counts
-- ARGV[5i + 3]): ARGV[holds_at + 1] says what the call does: 'decide' (a decision as the multi-window
-- script makes it), 'reserve' (the same, holding what it records for ARGV[holds_at + 2] us under the id
-- ARGV[holds_at + 3]) or 'commit' (of the id ARGV[holds_at + 2], ARGV[holds_at + 3] units spent).
-- A reserve answers 0, or the rule whose holds are all taken (then refused), and the decision. A commit
-- answers {1} when it released a hold, {2} when the reservation was committed before, and otherwise
-- (unknown, or its hold ran out) {3, then the decision of its units charged as a report charges them}.
-- Functions are defined only where a call needs them: each costs Redis on every call that defines it.
)lua";
inline constexpr auto kHoldsNumbers = [] {
  LuaText<96> lua;
  lua.line("local MAX_HOLDS, FORGET, FORGET_EVERY = ", kMaxHolds, ", ", kForgetPerCall, ", ", kForgetEvery);
  return lua;
}();
inline constexpr std::string_view kHoldsPreamble = R"lua(local rule_count = #KEYS / 2
local hold_keys = {}
for i = 1, rule_count do
  hold_keys[i] = KEYS[rule_count + i]
  KEYS[rule_count + i] = nil  -- the decision's loop reads the logs' keys alone
end
local holds_at = 3 + 5 * rule_count
local operation = ARGV[holds_at + 1]

-- The decision, as the multi-window script makes it.
local function decideAll()
)lua";

inline constexpr std::string_view kHoldsClosing = R"lua(
end

-- The holds that ran out, released: each entry settled to 0 units. Only a log holds. A reserve reads
-- every hold (at most MAX_HOLDS), to count those in force in the same call.
local in_force = {}
for i = 1, rule_count do
  if ARGV[5 * i + 3] == '' then
    local run_out = nil
    if operation == 'reserve' then
      local holds = redis.call('ZRANGEBYSCORE', hold_keys[i], '(0', '+inf', 'WITHSCORES')
      run_out = {}
      for at = 1, #holds, 2 do
        if tonumber(holds[at + 1]) <= now then run_out[#run_out + 1] = holds[at] end
      end
      in_force[i] = #holds / 2 - #run_out
    else
      run_out = redis.call('ZRANGEBYSCORE', hold_keys[i], '(0', now)
    end
    if #run_out > 0 then
      local settle = countedByUnits().changing().settle
      redis.call('ZREM', hold_keys[i], unpack(run_out))
      for _, id in ipairs(run_out) do
        local colon = string.find(id, ':', 1, true)
        settle(KEYS[i], string.sub(id, colon + 1), tonumber(string.sub(id, 1, colon - 1)), 0, tonumber(ARGV[5 * i]))
      end
    end
  end
end
if operation == 'decide' then return decideAll() end

if operation == 'reserve' then
  local full = nil
  for i = 1, rule_count do
    if in_force[i] >= MAX_HOLDS then
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
    local runs_out, id = now + tonumber(ARGV[holds_at + 2]), ARGV[holds_at + 3]
    for i = 1, rule_count do
      redis.call('ZADD', hold_keys[i], runs_out, id)
      -- a hold lasts at most a window, and its commit is remembered a window
      redis.call('PEXPIRE', hold_keys[i], 2 * math.ceil(tonumber(ARGV[5 * i]) / 1000))
    end
  end
  table.insert(answer, 1, full or 0)
  return answer
end

-- A commit: the hold in force on any rule, or committed before (remembered until its time is over,
-- whether or not a call has removed it yet).
local id, actual_text = ARGV[holds_at + 2], ARGV[holds_at + 3]
local actual = tonumber(actual_text)
local scores, held, committed = {}, false, false
for i = 1, rule_count do
  scores[i] = tonumber(redis.call('ZSCORE', hold_keys[i], id) or 0)
  if scores[i] > 0 then held = true elseif scores[i] < -now then committed = true end
end
if committed and not held then return {2} end

-- Each rule remembers the commit for its window: its holds' key lasts that long already where the hold
-- was in force (the reserve kept it two windows, and the hold lasts at most one), and is kept so
-- elsewhere. On one call in FORGET_EVERY (of Redis's microseconds) up to FORGET whose time is over go:
-- each commit adds one.
local function remember()
  for i = 1, rule_count do
    local hold_key, window = hold_keys[i], tonumber(ARGV[5 * i])
    redis.call('ZADD', hold_key, -(now + window), id)
    if scores[i] <= 0 then redis.call('PEXPIRE', hold_key, 2 * math.ceil(window / 1000)) end
    if now % FORGET_EVERY == 0 then
      local forgotten = redis.call('ZRANGEBYSCORE', hold_key, '-' .. text(now), '(0', 'LIMIT', 0, FORGET)
      if #forgotten > 0 then redis.call('ZREM', hold_key, unpack(forgotten)) end
    end
  end
end
if held then
  local settle = countedByUnits().changing().settle
  local colon = string.find(id, ':', 1, true)
  local units, member = tonumber(string.sub(id, 1, colon - 1)), string.sub(id, colon + 1)
  for i = 1, rule_count do
    if scores[i] > 0 then settle(KEYS[i], member, units, actual, tonumber(ARGV[5 * i])) end
  end
  remember()
  return {1}
end
-- Unknown, or its hold ran out: the units were spent. Charged at this call's own member, whatever they
-- find (each rule judging them under the larger of its limit and the charge), and remembered.
remember()
if actual == 0 then return {3} end
ARGV[3] = '1'
for i = 1, rule_count do
  ARGV[5 * i - 1] = actual_text
  if tonumber(ARGV[5 * i + 1]) < actual then ARGV[5 * i + 1] = actual_text end
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
