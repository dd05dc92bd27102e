#pragma once
/// \file
/// SlidingWindowLog: the exact sliding window log as an algorithm (the contract in algorithm.hpp), and its
/// Lua. Its limiter, SlidingWindowLimiter, is in algorithms/sliding_window.hpp.
///
/// A request of `cost` is admitted iff the units in (now - window, now] plus `cost` fit in the limit. Each
/// request is one entry, whatever its cost (a request of 4,000 tokens costs what a request of one does),
/// and sums of the entries' units keep every count and every retry_after exact in a bounded number of
/// steps: no call's work grows with the window or with a request's cost. Each tryAcquire is one EVALSHA
/// of the script below, atomic on the server, so any number of processes and threads sharing a Redis
/// agree exactly.
///
/// The script is the heart of swl: read it with docs/scripts.md beside it (or whole:
/// examples/swl_scripts sliding_window). It runs after the prelude in algorithm.hpp, which reads the
/// arguments, and the parts in algorithms/detail/sliding_window_log/: the layout and the fast path, the
/// sums, the steps.

#include <swl/algorithms/detail/sliding_window_log/check.hpp>
#include <swl/algorithms/detail/sliding_window_log/counted_by_units.hpp>
#include <swl/algorithms/detail/sliding_window_log/layout.hpp>
#include <swl/algorithms/detail/sliding_window_log/phases.hpp>
#include <swl/algorithms/detail/sliding_window_log/sums.hpp>
#include <swl/decision.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/wire.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace swl {

/// The exact sliding window log (the contract in algorithm.hpp): one sorted-set entry per request.
struct SlidingWindowLog {
  /// The limiter's name, for messages.
  static constexpr std::string_view kName = "swl::SlidingWindowLimiter";
  /// The script's name, for messages.
  static constexpr std::string_view kScriptName = "sliding_window";
  /// A member per request: the log records each admission.
  static constexpr bool kRecordsMembers = true;
  /// Any limit: the log keeps every limit exactly.
  static void check(const Limit&) {}
  /// The swl-native module's command (module/, docs/operations.md): kScript's decision, inside the server,
  /// on the same keys and taking the same arguments, for a fifth of its cost.
  static constexpr std::string_view kNativeCommand = detail::wire::kDecideCommand;

  /// The log's layout and its numbers (made from its wire format, detail/script/wire.hpp, which the
  /// module reads too), read by every script of the log and by MultiLimiter's.
  static constexpr std::array<std::string_view, 2> kLayout = detail::sliding_window_log::kLayout;

  /// The busiest paths, run before kParts and kFunctions define anything (a Lua function costs Redis on
  /// every call that defines it): on Redis's clock, one unit that a set counted by entries under this
  /// window has room for, and a refusal or peek of such a set, which records nothing. They take the steps
  /// of kFunctions' window, written out. An admission is recorded before it is known how the set counts:
  /// ZADD adds the entry and the mark for this window, and answers how many it added. A set counted by
  /// entries under this window has its mark (1, or 0 for a member policy that repeats itself); a new set
  /// holds nothing else at or below 0. Any other set (counted by units, or marked for another window)
  /// takes both back and goes on to kScript. A call without a member (recorded under its millisecond,
  /// which repeats) goes to kScript at once: its repeat, taken for the mark's, would hide a set counted
  /// by units.
  static constexpr std::array<std::string_view, 3> kFastPath = detail::sliding_window_log::kFastPath;

  /// The log's parts without I/O, run before kFunctions: the sums a set counted by units keeps, and the
  /// searches over them. Their reads and writes come in as methods of an `io` object, so they are tested
  /// alone in plain Lua 5.1, after kLayout, whose numbers they read (tests/lua/test_log_sums.lua).
  static constexpr std::array<std::string_view, 3> kParts = detail::sliding_window_log::kSums;

  /// The log's steps, shared by its scripts below and MultiLimiter's, which keeps one log per rule. A
  /// decision on one key is two phases: openWindow reads the window (for every rule of a MultiLimiter
  /// before any is recorded), closeWindow records the request or nothing; answerOf then answers. What
  /// only a set counted by units needs is built only for such a set (countedByUnits): a Lua function
  /// costs Redis on every call that defines it. Numbers go to redis.call as numbers where they can: Redis
  /// formats them with 17 significant digits, exact below 2^53 (unlike Lua's own 14 when concatenating).
  static constexpr std::array<std::string_view, 8> kFunctions{
      detail::sliding_window_log::kCountedByUnits[0], detail::sliding_window_log::kCountedByUnits[1],
      detail::sliding_window_log::kCountedByUnits[2], detail::sliding_window_log::kCountedByUnits[3],
      detail::sliding_window_log::kCountedByUnits[4], detail::sliding_window_log::kPhases[0],
      detail::sliding_window_log::kPhases[1],         detail::sliding_window_log::kPhases[2]};

  /// Every other decision: count, record when admitted (or when refusals count), answer. After kFastPath,
  /// which has read `start` and `live`.
  static constexpr std::string_view kScript = R"lua(
local ttl = tonumber(ARGV[6]) or math.ceil(window / 1000)
local w = openWindow(key, window, ARGV[1], now - window, live, start)
local allowed = w.held + cost <= limit
-- A rejected request writes nothing unless the caller opted into the penalty: recording rejections
-- by default would keep a flooded key full forever, admitting no one.
local member = nil
if record and (allowed or count_rejected) then
  member = ARGV[5]
  if member == nil or member == '' then member = text(math.floor(now / 1000)) end
end
closeWindow(w, member, cost, now, ttl)
return answerOf(w, allowed, cost, limit)
)lua"sv;

  /// Settles a reservation (RedisLimiter::settle) or gives a lease back (RedisLimiter::giveBack), after
  /// the prelude and kFunctions: ARGV[3] is the units the entry now holds, ARGV[5] its member, ARGV[8]
  /// the units it was recorded with. Returns 1 when it settled the entry now, 0 when there was nothing
  /// to settle.
  static constexpr std::string_view kSettleScriptName = "settle";
  /// The settle script's Lua (kSettleScriptName says what it does).
  static constexpr std::string_view kSettleScript = R"lua(
return countedByUnits().changing().settle(key, ARGV[5], tonumber(ARGV[8]), cost, window)
)lua"sv;

  /// A lease (LeasingLimiter), after the prelude and kFunctions: `cost` units for the request in hand and,
  /// when they fit, up to ARGV[8] units in all, the rest for the holder to use in its own memory until now
  /// + ARGV[9]. They are recorded as one entry at that end (or after the newest entry), so the entry
  /// counts from now until the lease's end + window: every window that holds a use of the lease holds the
  /// entry too (docs/leases.md has the proof). A lease takes at most 1/ARGV[10] of the window's
  /// room (at least `cost`), so other holders are not starved.
  ///   ARGV[8] units wanted in all (cost..limit)   ARGV[9] lease duration (us)   ARGV[10] room divisor
  ///   ARGV[11] the holder's previous lease on this key ('' for none), ARGV[12] its units, ARGV[13] the
  ///            units it used: given back first, so the room it leaves can be leased again at once
  /// Returns {allowed, remaining, retry_after_us, reset_after_us, units recorded (0 when refused)}.
  static constexpr std::string_view kLeaseScriptName = "lease";
  /// The lease script's Lua (kLeaseScriptName says what it does).
  static constexpr std::string_view kLeaseScript = R"lua(
if ARGV[11] ~= '' then countedByUnits().changing().settle(key, ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13]), window) end
local start = now - window
local w = openWindow(key, window, ARGV[1], start, redis.call('ZCOUNT', key, '(' .. text(start), TIMES_END))
local ttl = tonumber(ARGV[6])
-- Refused when the cost does not fit, and, under a block (algorithm.hpp's kBlockOpening), always.
if w.held + cost > limit or not record then
  local answer = answerOf(w, w.held + cost <= limit, cost, limit)
  answer[1], answer[5] = 0, 0
  return answer
end
local leased = math.max(cost, math.min(tonumber(ARGV[8]), math.floor((limit - w.held) / tonumber(ARGV[10]))))
local at = now
if leased > cost then at = now + tonumber(ARGV[9]) end
closeWindow(w, ARGV[5], leased, at, ttl, true)
local answer = answerOf(w, true, cost, limit)
answer[5] = leased
return answer
)lua"sv;

  /// Checks one key's log against its entries, for operators and the tests: every sum of the bookkeeping
  /// and of the nodes recomputed from the entries (`swl_scripts check_log`, run with EVAL and the Redis key
  /// as KEYS[1], or SlidingWindowLimiter::checkLog). Its work grows with the set, as it must: never a
  /// decision's. Answers {set kind ('entries' or 'units'), entries, units in the set, nodes of levels 1..4}
  /// or an error naming the first thing that disagrees.
  static constexpr std::string_view kCheckScriptName = "check_log";
  /// The check script's Lua (kCheckScriptName says what it does), in algorithms/detail/sliding_window_log/check.hpp.
  static constexpr std::string_view kCheckScript = detail::sliding_window_log::kCheck;
};

/// What SlidingWindowLimiter::checkLog found in one key's log, every sum recomputed from its entries.
struct LogCheck {
  /// Whether the set is counted by units (it keeps sums), rather than by entries.
  bool counted_by_units = false;
  /// The entries in the set, those that slid out but are still there included.
  std::int64_t entries = 0;
  /// The units those entries hold.
  std::int64_t units = 0;
  /// The sums the set stores at each level (16, 256, 4,096 and 65,536 entries).
  std::array<std::int64_t, 4> nodes{};
};

}  // namespace swl
