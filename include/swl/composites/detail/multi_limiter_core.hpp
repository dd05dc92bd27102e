#pragma once
// MultiLimiter's core: its script (a log, a periodic count or a GCRA bucket per rule, all decided before
// any records) and the calls that send it.

#include <swl/access_list.hpp>
#include <swl/algorithm.hpp>
#include <swl/algorithms/gcra.hpp>
#include <swl/algorithms/sliding_window.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/now.hpp>
#include <swl/detail/script/periods.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/detail/script/wire.hpp>
#include <swl/error.hpp>
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

// Several rules decided together, all or nothing, in one atomic Lua script: each a sliding window log
// (algorithms/sliding_window_log.hpp, whose steps SlidingWindowLog::kFunctions it runs for the rule's
// key), a count per period (kPeriodFunctions) or a GCRA token bucket (Gcra::kFunctions). Its arguments
// open its prelude, followed by the clock and the integer helpers every script shares (kClockAndIntegers).
inline constexpr std::string_view kMultiWindowArguments = R"lua(
-- KEYS[i]  rule i's key: a sliding window log's sorted set (SlidingWindowLog::kFunctions has its layout),
--          a periodic count's hash (kPeriodFunctions) or a GCRA rule's string (Gcra::kFunctions)
-- ARGV[1]  now in microseconds since the epoch; '' reads Redis's own clock; '-' and 16 digits: Redis's own
--          clock, and the call's deadline on it (0: none), past which the call records nothing
-- ARGV[2]  this request's unique member; '' uses its millisecond timestamp
-- ARGV[3]  '1' to record rejected requests too (an opt-in penalty); '-' to record nothing (a dry run:
--          the same answers, and each rule's state as it stands)
-- Then five per rule, in the keys' order: rule i's are ARGV[at + 1] .. ARGV[at + 5], at = 3 + 5 * (i - 1).
-- ARGV[at + 1]  its cost: the units this request asks of this rule (1 <= cost <= its limit, checked by the
--               client). Each rule has its own, as each of Envoy's descriptors has its own hits_addend
-- ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]  its window (microseconds), limit and expiry (milliseconds;
--               a GCRA key lives at least until its arrival time, a periodic one until its period ends)
-- ARGV[at + 5]  how it counts: '' for a sliding window log; 'gcra' for a GCRA token bucket; for a
--               periodic rule (a calendar day, say), the bounds of the periods around the client's now
--               (kPeriodFunctions), digits and spaces
-- Returns {allowed 1|0, then for each rule: remaining, retry_after_us, reset_after_us}, integers only.
-- The request is recorded in every rule, each at its own cost, only if every rule admits it: no rule
-- pays for a refusal.
local now_text = ARGV[1]
)lua"sv;

// What ARGV[at + 5] says of a GCRA rule (kMultiWindowArguments): no period's bounds hold a letter.
inline constexpr std::string_view kGcraRule = "gcra";

inline constexpr std::string_view kMultiWindowScript = R"lua(
-- Each rule's decision before any rule records anything: a GCRA rule's arrival time (Gcra::kFunctions'
-- decide), a period's count (kPeriodFunctions), or a log read as the log's own script reads it
-- (SlidingWindowLog::kFunctions' openWindow). A rule refuses only the cost asked of it: another rule's
-- larger cost is that rule's to refuse.
local periods, gcra, rules, allowed = nil, nil, {}, true
for i, rule_key in ipairs(KEYS) do
  local at = 3 + 5 * (i - 1)
  local window = tonumber(ARGV[at + 2])
  local rule = {key = rule_key, cost = tonumber(ARGV[at + 1]), limit = tonumber(ARGV[at + 3]),
                ttl = tonumber(ARGV[at + 4])}
  local counting = ARGV[at + 5]
  if counting == 'gcra' then
    gcra = gcra or gcraSteps()
    rule.cell = gcra.decide(rule_key, window, rule.limit, rule.cost)
    rule.refused = not rule.cell.allowed
  elseif counting ~= '' then
    periods = periods or countedByPeriods()
    rule.period_start, rule.period_end = periods.of(counting)
    if not rule.period_start then return periods.missed(counting) end
    rule.held = periods.units(rule_key, rule.period_start, rule.period_end)
    rule.refused = rule.held + rule.cost > rule.limit
  else
    local start = now - window
    local live = redis.call('ZCOUNT', rule_key, '(' .. text(start), TIMES_END)
    rule.log = openWindow(rule_key, window, ARGV[at + 2], start, live)
    rule.refused = rule.log.held + rule.cost > rule.limit
  end
  if rule.refused then allowed = false end
  rules[i] = rule
end

-- Recorded in every rule, each at its own cost, or in none. The first rule's write is the script's
-- first, so Redis over maxmemory refuses before any change.
local member = nil
if ARGV[3] ~= '-' and (allowed or ARGV[3] == '1') then
  member = ARGV[2]
  if member == '' then member = text(math.floor(now / 1000)) end
end
local result = {allowed and 1 or 0}
for _, rule in ipairs(rules) do
  local answer
  if rule.cell then
    if member then gcra.record(rule.cell, rule.ttl) end
    answer = gcra.answer(rule.cell)
  elseif rule.period_end then
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

// The swl-native module's command (module/, docs/operations.md) that decides a multi-window call whose
// rules are all logs in the script's place, taking its keys, counted, and its arguments as they are.
inline constexpr std::string_view kEveryRuleALogCommand = wire::kDecideAllCommand;

// How many arguments the multi-window script takes before its rules' (now, member, recording), and
// per rule (cost, window, limit, expiry, how it counts): kMultiWindowArguments has the layout, and the
// wire format (detail/script/wire.hpp) their places, which the module reads too.
inline constexpr std::size_t kMultiWindowSharedArguments = wire::kSharedMultiArguments;
inline constexpr std::size_t kMultiWindowArgumentsPerRule = wire::kMultiArgumentsPerRule;
// The most rules one decision takes.
inline constexpr std::size_t kMaxMultiRules = 9;
// What a call on holds adds after the rules' arguments (multi_holds.hpp): what it does, and its two values.
inline constexpr std::size_t kHoldArguments = 3;
// The 3 are EVALSHA, the SHA-1 and the key count: the words every call spends before its keys. Each rule
// may have its holds' key beside its own.
static_assert(3 + 2 * kMaxMultiRules + kMultiWindowSharedArguments + kMultiWindowArgumentsPerRule * kMaxMultiRules +
                      kHoldArguments <=
                  ScriptCall::kMaxArguments,
              "a MultiLimiter of the most rules must fit its keys and arguments in one ScriptCall");
static_assert(2 * kMaxMultiRules <= ScriptCall::kMaxKeys, "a call must take every rule's key and its holds' key");

// One multi-window call, as text it owns: its Redis keys and its arguments (kMultiWindowArguments).
struct MultiWindowCall {
  std::size_t rule_count = 0;
  std::array<std::string, kMaxMultiRules> redis_keys;
  ScriptNow now;
  std::string member;
  std::string_view recording;  // ARGV[3]: '0', '1' (refusals recorded too) or '-' (a dry run)
  // Each rule's cost, window, limit and expiry, and how it counts: a periodic rule's periods, kGcraRule,
  // or nothing for a log.
  std::array<IntegerText, 4 * kMaxMultiRules> rule_numbers;
  std::array<std::string, kMaxMultiRules> counting;
  // A call on holds (multi_holds.hpp): each rule's holds' key, what the call does, and its two values.
  std::array<std::string, kMaxMultiRules> holds_keys;
  std::string_view operation;
  std::array<std::string, 2> operands;

  // Whether every rule is a sliding window log (counted by nothing else): SWL.DECIDEALL's calls.
  bool everyRuleALog() const noexcept {
    return std::all_of(counting.begin(), counting.begin() + static_cast<std::ptrdiff_t>(rule_count),
                       [](const std::string& rule) { return rule.empty(); });
  }

  // The call of `script` (the multi-window script), viewing this text: valid while it stays in place.
  ScriptCall call(const Script& script) const {
    const std::size_t key_count = operation.empty() ? rule_count : 2 * rule_count;
    std::array<std::string_view, 2 * kMaxMultiRules> keys;
    std::copy(redis_keys.begin(), redis_keys.begin() + static_cast<std::ptrdiff_t>(rule_count), keys.begin());
    std::copy(holds_keys.begin(), holds_keys.begin() + static_cast<std::ptrdiff_t>(key_count - rule_count),
              keys.begin() + static_cast<std::ptrdiff_t>(rule_count));
    std::array<std::string_view,
               kMultiWindowSharedArguments + kMultiWindowArgumentsPerRule * kMaxMultiRules + kHoldArguments>
        args{};
    args[wire::kMultiNowArgument - 1] = now.argument();
    args[wire::kMultiMemberArgument - 1] = member;
    args[wire::kMultiRecordingArgument - 1] = recording;
    for (std::size_t i = 0; i < rule_count; ++i) {
      std::string_view* rule = &args[kMultiWindowSharedArguments + kMultiWindowArgumentsPerRule * i];
      const IntegerText* numbers = &rule_numbers[4 * i];  // cost, window, limit, expiry
      rule[wire::kRuleCostArgument - 1] = numbers[0];
      rule[wire::kRuleWindowArgument - 1] = numbers[1];
      rule[wire::kRuleLimitArgument - 1] = numbers[2];
      rule[wire::kRuleTtlArgument - 1] = numbers[3];
      rule[wire::kRuleCountingArgument - 1] = counting[i];
    }
    std::size_t arg_count = kMultiWindowSharedArguments + kMultiWindowArgumentsPerRule * rule_count;
    if (!operation.empty()) {
      args[arg_count++] = operation;
      args[arg_count++] = operands[0];
      args[arg_count++] = operands[1];
    }
    ScriptCall call(script, keys.data(), key_count, args.data(), arg_count);
    if (now.carriesDeadline()) call.carryDeadlineIn(wire::kMultiNowArgument);
    return call;
  }
};

// A multi-window script's reply: {allowed, then per rule: remaining, retry_after_us, reset_after_us}, as
// one Decision per rule, rule i under limits[i]. A rule admitted iff its retry_after is 0, and `allowed`
// must say whether every rule did. `rules` is 1..kMaxRules (the script's key limit). `skip` integers
// before it (a call on holds says something first) are the caller's: they go to `skipped`.
template <std::size_t kMaxRules>
std::vector<Decision> decodeRuleDecisions(ReplyView reply, const std::int64_t* limits, std::size_t rules,
                                          std::size_t skip = 0, std::int64_t* skipped = nullptr) {
  if (rules == 0 || rules > kMaxRules) {
    throw InvalidArgument("swl: a decision of " + std::to_string(rules) + " rules; one decision takes 1 to " +
                          std::to_string(kMaxRules));
  }
  std::array<std::int64_t, 2 + 3 * kMaxRules> read;
  readIntegers(reply, read.data(), skip + 1 + 3 * rules);
  std::copy(read.begin(), read.begin() + static_cast<std::ptrdiff_t>(skip), skipped);
  const std::int64_t* values = read.data() + skip;
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
