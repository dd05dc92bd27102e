#pragma once
// The sliding window log's wire format, written once for everything that reads or writes a log: its Lua
// (whose constants lines are made from these: luaLayoutConstants and the lines below it), the library's
// calls and the swl-native module (module/), which decides on the same keys in the same layout. A change
// of anything here is a change of layout: kLayoutVersion says which, and a client sends the module's
// commands only to a module of its own layout. Plain constants and std only: the module includes this
// beside redismodule.h. (algorithms/detail/sliding_window_log/layout.hpp says what each part is for.)

#include <swl/detail/script/lua_text.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace swl::detail::wire {

// The layout's version: swl 0.4's. The module registers it (its module version, and a tip of its
// commands that COMMAND INFO shows, which the handshake reads: kLayoutTip).
inline constexpr int kLayoutVersion = 4;
// The command tip that carries it: "swl-layout:4".
inline constexpr std::string_view kLayoutTipName = "swl-layout";
inline constexpr auto kLayoutTipText = [] {
  LuaText<32> tip;
  tip.add(kLayoutTipName).add(":").add(std::int64_t{kLayoutVersion});
  return tip;
}();
inline constexpr std::string_view kLayoutTip = kLayoutTipText.view();

// Scores. Every entry's time, in microseconds, lies below 2^53 (exact in a double); marks lie at 0, the
// bookkeeping below 0, and the sums' nodes at and above 2^53, each level in a band of its own.
inline constexpr std::int64_t kTimesEnd = std::int64_t{1} << 53;
inline constexpr std::int64_t kNodeBandWidth = std::int64_t{1} << 50;

// Trims. Counted by entries: at most kTrim slid-out entries go, on one call in kTrimEvery (of Redis's
// microseconds). Counted by units: at most kUnitsTrim, on every call that records.
inline constexpr std::int64_t kTrim = 16;
inline constexpr std::int64_t kTrimEvery = 8;
inline constexpr std::int64_t kUnitsTrim = 8;
// Members read at or below a window's start: its marks, then entries.
inline constexpr std::int64_t kLow = kUnitsTrim + 3;
// Entries read at once where a search costs least (a retry_after near the window's either end).
inline constexpr std::int64_t kNear = 16;

// The sums of a set counted by units: kLevels levels; a node of level k sums kFanout^k entries.
inline constexpr int kLevels = 4;
inline constexpr std::int64_t kFanout = 16;
constexpr std::int64_t nodeSize(int level) {
  std::int64_t size = 1;
  for (int k = 0; k < level; ++k) size *= kFanout;
  return size;
}
// The lowest score of level `level`'s nodes (1..kLevels); a node's score is that plus twice its index.
constexpr std::int64_t nodeBand(int level) { return kTimesEnd + (level - 1) * kNodeBandWidth; }

// Members: the first byte says what a member is.
inline constexpr char kMarkByte = '!';          // a set counted by entries' mark: '!' window ['@' horizon]
inline constexpr char kBookkeepingByte = '#';   // the bookkeeping, or a node of the sums
inline constexpr char kUnitsByte = '*';         // an entry that carries its units: '*' double member
inline constexpr char kSettledByte = '+';       // the same once settled
inline constexpr char kHorizonSeparator = '@';  // in a mark, before the horizon
inline constexpr char kRepeatSeparator = ')';   // after a repeated entry's name, before its number
// The bookkeeping: '#' and kBookFields big-endian doubles (extra, oldest, next, newest, last_unit,
// horizon, writes, then each level's tail and gone).
inline constexpr int kBookFields = 7 + 2 * kLevels;
inline constexpr std::size_t kBookBytes = 1 + 8 * kBookFields;
// A node: '#', its level (one byte), its sum and its index (two big-endian doubles).
inline constexpr std::size_t kNodeBytes = 2 + 8 * 2;
// Sets of swl 0.2 named an entry's units after one of these: 'member*units', 'member=units'.
inline constexpr std::string_view kOldUnitsSeparators = "*=";

// The commands of the module, and their arguments. SWL.DECIDE takes the log's script's key and ARGV, in
// the same places (the prelude of every script reads them: swl/detail/script/assembly.hpp).
inline constexpr std::string_view kDecideCommand = "SWL.DECIDE";
inline constexpr std::string_view kDecideAllCommand = "SWL.DECIDEALL";
enum Argument : int {  // ARGV[i] of the script, argv[1 + i] of SWL.DECIDE (argv[1] is the key)
  kWindowArgument = 1,
  kLimitArgument = 2,
  kCostArgument = 3,
  kNowArgument = 4,
  kMemberArgument = 5,
  kTtlArgument = 6,
  kCountRejectedArgument = 7,
};
inline constexpr int kDecideArguments = 7;
// SWL.DECIDEALL, as MultiLimiter's script: its keys, then three arguments every rule shares, then five
// per rule (ARGV[kSharedMultiArguments + kMultiArgumentsPerRule * (i - 1) + offset] for rule i).
enum MultiArgument : int {  // shared: ARGV[1..3]
  kMultiNowArgument = 1,
  kMultiMemberArgument = 2,
  kMultiRecordingArgument = 3,
};
inline constexpr int kSharedMultiArguments = 3;
enum RuleArgument : int {  // a rule's: offsets 1..5 after its start
  kRuleCostArgument = 1,
  kRuleWindowArgument = 2,
  kRuleLimitArgument = 3,
  kRuleTtlArgument = 4,
  kRuleCountingArgument = 5,
};
inline constexpr int kMultiArgumentsPerRule = 5;

// The error words a decision may answer with: LAYOUT (the module met a set of swl 0.2 or 0.3, which the
// script renumbers once; nothing written) and EXPIRED (the call ran past its deadline; nothing written).
inline constexpr std::string_view kLayoutError = "LAYOUT";
inline constexpr std::string_view kExpiredError = "EXPIRED";

// The Lua's constants lines, made of the numbers above. Those every log script reads from its first line
// on (luaLayoutConstants) are top-level locals, a few constant loads per call; the tables (the sums'
// levels, the nodes' bands) are made where the Lua builds them, only for a set counted by units.
constexpr LuaText<1536> luaLayoutConstants() {
  LuaText<1536> lua;
  lua.line("-- The layout's numbers and bytes, from swl's wire format (swl/detail/script/wire.hpp),")
      .line("-- which swl-native reads too.")
      .line("local TIMES_END = '(", kTimesEnd, "'  -- every entry's time lies below 2^53; sums lie outside")
      .line("local TRIM, TRIM_EVERY = ", kTrim, ", ", kTrimEvery,
            "  -- counted by entries: at most TRIM, on one call in TRIM_EVERY")
      .line("local UNITS_TRIM = ", kUnitsTrim, "  -- counted by units: at most UNITS_TRIM, on every call that records")
      .line("local LOW = ", kLow, "  -- members read at or below a window's start: marks, then entries")
      .line("-- A member's first byte says what it is: a mark, bookkeeping or a sum, an entry that carries its")
      .line("-- units, or one that carries them settled; a mark holds HORIZON before its horizon, and a repeated")
      .line("-- entry's name REPEAT before its number.")
      .line("local MARK, BOOKKEEPING, UNITS, SETTLED = ", luaQuoted(kMarkByte), ", ", luaQuoted(kBookkeepingByte), ", ",
            luaQuoted(kUnitsByte), ", ", luaQuoted(kSettledByte))
      .line("local MARK_BYTE, BOOKKEEPING_BYTE, UNITS_BYTE, SETTLED_BYTE = ", int{kMarkByte}, ", ",
            int{kBookkeepingByte}, ", ", int{kUnitsByte}, ", ", int{kSettledByte})
      .line("local HORIZON, REPEAT = ", luaQuoted(kHorizonSeparator), ", ", luaQuoted(kRepeatSeparator))
      .line("local BOOK_BYTES, NODE_BYTES = ", kBookBytes, ", ", kNodeBytes, "  -- the bookkeeping's length, a node's")
      .line("local OLD_UNITS = '[", kOldUnitsSeparators, "]%d+$'  -- 0.2's entries name their units last");
  return lua;
}

// Inside the sums (logSums): their levels, the entries a node of each spans, and the bookkeeping's
// doubles as struct.pack reads them.
constexpr LuaText<256> luaSumsConstants() {
  LuaText<256> lua;
  lua.line("  local LEVELS, FANOUT = ", kLevels, ", ", kFanout);
  lua.add("  local SIZE = {");
  for (int level = 1; level <= kLevels; ++level) lua.add(level == 1 ? "" : ", ").add(nodeSize(level));
  lua.add("}  -- FANOUT ^ level: quotients of entry numbers below 2^52 are exact\n");
  lua.add("  local FIELDS = '>");
  for (int field = 0; field < kBookFields; ++field) lua.add("d");
  lua.add("'  -- the bookkeeping's doubles\n");
  return lua;
}

// Inside countedByUnits: the score band of each level's nodes (2^53, then 2^50 beyond, again and again).
constexpr LuaText<256> luaNodeBands() {
  LuaText<256> lua;
  lua.add("  local NODE_BAND = {");
  for (int level = 1; level <= kLevels; ++level) lua.add(level == 1 ? "" : ", ").add(nodeBand(level));
  lua.add("}\n");
  return lua;
}

// Inside the searches: the entries read at once where a search costs least.
constexpr LuaText<96> luaNear() {
  LuaText<96> lua;
  lua.line("    local NEAR = ", kNear, "  -- entries read at once where a search costs least");
  return lua;
}

}  // namespace swl::detail::wire
