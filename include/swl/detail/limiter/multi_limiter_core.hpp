#pragma once
// MultiLimiter's core: its script (a log or a periodic count per rule, all decided before any records)
// and the calls that send it.

#include <swl/access_list.hpp>
#include <swl/algorithm.hpp>
#include <swl/algorithms/sliding_window.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/script/calls.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/periods.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/options.hpp>
#include <swl/periods.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/client.hpp>

#include <algorithm>
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

// Several sliding window logs decided together, all or nothing, in one atomic Lua script: the log of
// algorithms/sliding_window_log.hpp, whose steps (SlidingWindowLog::kFunctions) it runs for each rule's key.
// Its arguments open its prelude, followed by the clock and the integer helpers every script shares
// (kClockAndIntegers).
inline constexpr std::string_view kMultiWindowArguments = R"lua(
-- KEYS[i]  rule i's sorted set: the sliding window log (SlidingWindowLog::kFunctions has its layout)
-- ARGV[1]  now in microseconds since the epoch; '' reads Redis's own clock
-- ARGV[2]  this request's unique member; '' uses its millisecond timestamp
-- ARGV[3]  '1' to record rejected requests too (an opt-in penalty)
-- Then five per rule, in the keys' order: rule i's are ARGV[at + 1] .. ARGV[at + 5], at = 3 + 5 * (i - 1).
-- ARGV[at + 1]  its cost: the units this request asks of this rule (1 <= cost <= its limit, checked by the
--               client). Each rule has its own, as each of Envoy's descriptors has its own hits_addend
-- ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]  its window (microseconds), limit and expiry (milliseconds)
-- ARGV[at + 5]  for a periodic rule (a calendar day, say), the bounds of the periods around the client's
--               now (kPeriodFunctions); '' for a sliding window log
-- Returns {allowed 1|0, then for each rule: remaining, retry_after_us, reset_after_us}, integers only.
-- The request is recorded in every log, each at its own cost, only if every rule admits it: no rule pays
-- for a refusal.
local now_text = ARGV[1]
)lua"sv;

inline constexpr std::string_view kMultiWindowScript = R"lua(
-- Each rule's window: a period's count (kPeriodFunctions), or a log read as the log's own script reads
-- it (SlidingWindowLog::kFunctions' openWindow), before any rule records anything.
local periods, rules, allowed = nil, {}, true
for i, log_key in ipairs(KEYS) do
  local at = 3 + 5 * (i - 1)
  local window = tonumber(ARGV[at + 2])
  local rule = {key = log_key, cost = tonumber(ARGV[at + 1]), limit = tonumber(ARGV[at + 3]),
                ttl = tonumber(ARGV[at + 4])}
  local bounds = ARGV[at + 5]
  if bounds ~= '' then
    periods = periods or countedByPeriods()
    rule.period_start, rule.period_end = periods.of(bounds)
    if not rule.period_start then return periods.missed(bounds) end
    rule.held = periods.units(log_key, rule.period_start, rule.period_end)
  else
    local start = now - window
    local live = redis.call('ZCOUNT', log_key, '(' .. text(start), TIMES_END)
    rule.log = openWindow(log_key, window, ARGV[at + 2], start, live)
    rule.held = rule.log.held
  end
  -- A rule refuses only the cost asked of it: another rule's larger cost is that rule's to refuse.
  rule.refused = rule.held + rule.cost > rule.limit
  if rule.refused then allowed = false end
  rules[i] = rule
end

-- Recorded in every rule, each at its own cost, or in none. The first rule's write is the script's
-- first, so Redis over maxmemory refuses before any change.
local member = nil
if allowed or ARGV[3] == '1' then
  member = ARGV[2]
  if member == '' then member = text(math.floor(now / 1000)) end
end
local result = {allowed and 1 or 0}
for _, rule in ipairs(rules) do
  local answer
  if rule.period_end then
    if member then
      rule.held = rule.held + rule.cost
      periods.record(rule.key, rule.period_start, rule.period_end, rule.held)
    end
    -- Any cost up to the limit fits in the next period.
    answer = {0, rule.limit - rule.held, 0, 0}
    if rule.refused then answer[3] = rule.period_end - now end
    if rule.held > 0 then answer[4] = rule.period_end - now end
  else
    closeWindow(rule.log, member, rule.cost, now, rule.ttl)
    answer = answerOf(rule.log, not rule.refused, rule.cost, rule.limit)
  end
  -- remaining (below 0 when counted refusals filled it past the limit), retry_after, reset_after
  result[#result + 1], result[#result + 2], result[#result + 3] = answer[2], answer[3], answer[4]
end
return result
)lua"sv;

// How many arguments the multi-window script takes before its rules' (now, member, count_rejected), and
// per rule (cost, window, limit, expiry, bounds): kMultiWindowArguments has the layout.
inline constexpr std::size_t kMultiWindowSharedArguments = 3;
inline constexpr std::size_t kMultiWindowArgumentsPerRule = 5;
// The 3 are EVALSHA, the SHA-1 and the key count: the words every call spends before its keys.
static_assert(3 + ScriptCall::kMaxKeys + kMultiWindowSharedArguments +
                      kMultiWindowArgumentsPerRule * ScriptCall::kMaxKeys <=
                  ScriptCall::kMaxArguments,
              "a MultiLimiter of the most rules must fit its keys and arguments in one ScriptCall");

// A multi-window script's reply: {allowed, then per rule: remaining, retry_after_us, reset_after_us}, as
// one Decision per rule, rule i under limits[i]. A rule admitted iff its retry_after is 0, and `allowed`
// must say whether every rule did. `rules` is 1..kMaxRules (the script's key limit).
template <std::size_t kMaxRules>
std::vector<Decision> decodeRuleDecisions(ReplyView reply, const std::int64_t* limits, std::size_t rules) {
  if (rules == 0 || rules > kMaxRules) {
    throw InvalidArgument("swl: a decision of " + std::to_string(rules) + " rules; one decision takes 1 to " +
                          std::to_string(kMaxRules));
  }
  std::array<std::int64_t, 1 + 3 * kMaxRules> values;
  readIntegers(reply, values.data(), 1 + 3 * rules);
  std::vector<Decision> decisions;
  decisions.reserve(rules);
  bool every_rule_admitted = true;
  for (std::size_t i = 0; i < rules; ++i) {
    const std::int64_t* rule = &values[1 + 3 * i];
    decisions.push_back(checkedDecision(rule[1] == 0 ? 1 : 0, rule[0], rule[1], rule[2], limits[i]));
    every_rule_admitted = every_rule_admitted && decisions.back().allowed;
  }
  if (values[0] != (every_rule_admitted ? 1 : 0)) {
    throw badReply("allowed = " + std::to_string(values[0]) + " against its rules' answers");
  }
  return decisions;
}

}  // namespace swl::detail
