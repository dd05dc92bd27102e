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
-- ARGV[1]  cost: units this request asks of every rule (1 <= cost <= each limit, checked by the client)
-- ARGV[2]  now in microseconds since the epoch; '' reads Redis's own clock
-- ARGV[3]  this request's unique member; '' uses its millisecond timestamp
-- ARGV[4]  '1' to record rejected requests too (an opt-in penalty)
-- ARGV[1 + 4i], ARGV[2 + 4i], ARGV[3 + 4i]  rule i's window (microseconds), limit and expiry (milliseconds)
-- ARGV[4 + 4i]  for a periodic rule (a calendar day, say), the bounds of the periods around the client's
--               now (kPeriodFunctions); '' for a sliding window log
-- Returns {allowed 1|0, then for each rule: remaining, retry_after_us, reset_after_us}, integers only.
-- The request is recorded in every log only if every rule admits it: no rule pays for a refusal.
local cost = tonumber(ARGV[1])
local now_text = ARGV[2]
)lua"sv;

inline constexpr std::string_view kMultiWindowScript = R"lua(
-- Each rule's window: a period's count (kPeriodFunctions), or a log read as the log's own script reads
-- it (SlidingWindowLog::kFunctions' openWindow), before any rule records anything.
local periods, rules, allowed = nil, {}, true
for i, log_key in ipairs(KEYS) do
  local window = tonumber(ARGV[1 + 4 * i])
  local rule = {key = log_key, limit = tonumber(ARGV[2 + 4 * i]), ttl = tonumber(ARGV[3 + 4 * i])}
  local bounds = ARGV[4 + 4 * i]
  if bounds ~= '' then
    periods = periods or countedByPeriods()
    rule.period_start, rule.period_end = periods.of(bounds)
    if not rule.period_start then return periods.missed(bounds) end
    rule.held = periods.units(log_key, rule.period_start, rule.period_end)
  else
    local start = now - window
    local live = redis.call('ZCOUNT', log_key, '(' .. text(start), TIMES_END)
    rule.log = openWindow(log_key, window, ARGV[1 + 4 * i], start, live)
    rule.held = rule.log.held
  end
  rule.refused = rule.held + cost > rule.limit
  if rule.refused then allowed = false end
  rules[i] = rule
end

-- Recorded in every rule or in none. The first rule's write is the script's first, so Redis over
-- maxmemory refuses before any change.
local member = nil
if allowed or ARGV[4] == '1' then
  member = ARGV[3]
  if member == '' then member = text(math.floor(now / 1000)) end
end
local result = {allowed and 1 or 0}
for _, rule in ipairs(rules) do
  local answer
  if rule.period_end then
    if member then
      rule.held = rule.held + cost
      periods.record(rule.key, rule.period_start, rule.period_end, rule.held)
    end
    -- Any cost up to the limit fits in the next period.
    answer = {0, rule.limit - rule.held, 0, 0}
    if rule.refused then answer[3] = rule.period_end - now end
    if rule.held > 0 then answer[4] = rule.period_end - now end
  else
    closeWindow(rule.log, member, cost, now, rule.ttl)
    answer = answerOf(rule.log, not rule.refused, cost, rule.limit)
  end
  -- remaining (below 0 when counted refusals filled it past the limit), retry_after, reset_after
  result[#result + 1], result[#result + 2], result[#result + 3] = answer[2], answer[3], answer[4]
end
return result
)lua"sv;

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
