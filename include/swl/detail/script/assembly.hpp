#pragma once
// How every script is put together and called: the prelude every script starts with (it reads the
// arguments), the algorithm's parts after it (scriptText), and each algorithm's Script, made once.

#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/detail/script/deadline.hpp>
#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/wire.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/hash_slot.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace swl::detail {

// The arguments of a call on one key, read the same way by every algorithm's script: the first part of
// its prelude.
inline constexpr std::string_view kOneKeyArguments = R"lua(
-- swl: one atomic rate-limit decision for one key. This prelude reads the arguments every algorithm
-- takes; the algorithm's own part follows it (include/swl/algorithms/).
-- KEYS[1]  the key's state
-- ARGV[1]  window in microseconds
-- ARGV[2]  limit: the most units the window admits
-- ARGV[3]  cost: units this request asks for (1 <= cost <= limit, checked by the client); default 1;
--          0 peeks: the state is read (a log may be trimmed) but nothing is recorded
-- ARGV[4]  now in microseconds since the epoch; '' or absent: read Redis's own clock; '-' and 16 digits:
--          Redis's own clock, and the call's deadline on it (0: none): a call the client may have
--          answered without Redis (its failure policy, at its deadline) records nothing if it runs later
-- ARGV[5]  this request's unique member, for algorithms that record one; '' or absent: its millisecond
--          timestamp (the seed articles' scheme)
-- ARGV[6]  expiry in milliseconds for algorithms that take one, set on every write; absent: the window
-- ARGV[7]  '1' to record rejected requests too (an opt-in penalty); otherwise a refusal changes nothing
-- Returns {allowed 1|0 (or -1 from a blocking limiter's script: refused, the key is blocked), remaining,
-- retry_after_us, reset_after_us}, integers only: Redis truncates a
-- Lua number on its way to the client, so durations travel as whole microseconds. `remaining` is
-- limit minus what the window holds, below 0 when counted refusals filled it past the limit.
-- The first three arguments alone make a call, so other tools (redis-benchmark, ../shared/bench) can
-- run the same script.
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local cost = tonumber(ARGV[3] or 1)
local record = cost > 0
local count_rejected = ARGV[7] == '1'
local now_text = ARGV[4]
)lua"sv;

// The second part of every prelude, MultiLimiter's too, once its arguments have set now_text: the clock,
// and integer helpers.
inline constexpr std::string_view kClockAndIntegersOpening = R"lua(
-- Times sent back to Redis are built from integer parts: Lua formats a concatenated number with 14
-- significant digits and would cut the last digits off a 16-digit microsecond time.
-- A deadline ('-' and the microseconds) comes on Redis's clock: a call that starts past it answers an
-- EXPIRED error before it writes anything. Its client stopped waiting, and may have refused the request
-- without Redis; recording it now would take from the callers after it. (A comparison finds the '-':
-- the string library's functions are globals, each a lookup through Redis's read-only global table.)
local deadline = 0
if now_text ~= nil and now_text ~= '' and now_text < '0' then
  deadline = -tonumber(now_text)
  now_text = ''
end
local redis_time = now_text == nil or now_text == ''
if redis_time then
  local time = redis.call('TIME')
  now_text = time[1] .. string.format('%06d', tonumber(time[2]))
end
local now = tonumber(now_text)  -- below 2^53, so exact in a Lua double
if deadline > 0 and now > deadline then
  return redis.error_reply(')lua"sv;
inline constexpr std::string_view kClockAndIntegersClosing =
    R"lua( swl: the call ran ' .. (now - deadline) .. ' us past its deadline; nothing recorded')
end

-- Every value below stays an integer under 2^53, exact in a Lua double; two helpers keep it so.
-- a // b: the quotient of two doubles can round up to the next integer, so it is checked.
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
-- An integer as Redis should store it: Lua would print only 14 significant digits.
local function text(n) return string.format('%.0f', n) end
)lua"sv;
// Its error word for a call past its deadline is the wire format's (wire.hpp), which the module answers too.
inline constexpr std::array<std::string_view, 3> kClockAndIntegers{kClockAndIntegersOpening, wire::kExpiredError,
                                                                   kClockAndIntegersClosing};

// The opening of every algorithm's script: its arguments, the clock and the integer helpers.
inline const std::string& scriptPrelude() {
  static const std::string prelude = std::string(kOneKeyArguments) + wholePart(kClockAndIntegers);
  return prelude;
}

// Whether Member<T> names something: the optional parts of an algorithm, one alias each below.
template <template <class> class Member, class T, class = void>
struct Provides : std::false_type {};
template <template <class> class Member, class T>
struct Provides<Member, T, std::void_t<Member<T>>> : std::true_type {};

template <class T>
using LayoutPart = decltype(T::kLayout);
template <class T>
using FastPathPart = decltype(T::kFastPath);
template <class T>
using PartsPart = decltype(T::kParts);
template <class T>
using FunctionsPart = decltype(T::kFunctions);
template <class T>
using NativeCommandPart = decltype(T::kNativeCommand);
template <class T>
using ArgumentPart = decltype(std::declval<const T&>().argument(std::optional<std::chrono::microseconds>()));

template <class T>
inline constexpr bool hasLayout = Provides<LayoutPart, T>::value;
template <class T>
inline constexpr bool hasFastPath = Provides<FastPathPart, T>::value;
template <class T>
inline constexpr bool hasParts = Provides<PartsPart, T>::value;
template <class T>
inline constexpr bool hasFunctions = Provides<FunctionsPart, T>::value;
template <class T>
inline constexpr bool hasArgument = Provides<ArgumentPart, T>::value;
template <class T>
inline constexpr bool hasNativeCommand = Provides<NativeCommandPart, T>::value;

// The prelude (`arguments`, then the clock and the integer helpers), the algorithm's layout, its fast
// path (for its decisions alone), its parts, its functions and then `part`: how every script is put
// together. (MultiLimiter's reads arguments of its own, a key and a limit per rule.)
template <class Algorithm>
std::string scriptText(std::string_view part, bool with_fast_path = false,
                       std::string_view arguments = kOneKeyArguments) {
  std::string whole(arguments);
  appendPart(whole, kClockAndIntegers);
  // each part one text, or several in order (the log's: written texts and the wire format's numbers)
  if constexpr (hasLayout<Algorithm>) appendPart(whole, Algorithm::kLayout);
  if constexpr (hasFastPath<Algorithm>) {
    if (with_fast_path) appendPart(whole, Algorithm::kFastPath);
  }
  if constexpr (hasParts<Algorithm>) appendPart(whole, Algorithm::kParts);
  if constexpr (hasFunctions<Algorithm>) appendPart(whole, Algorithm::kFunctions);
  return whole.append(part);
}

// A blocking limiter's scripts (LimiterOptions::block_for): its algorithm's script, whole after the
// prelude, runs inside these as a function, so that one refusal blocks the key for every process.
inline constexpr std::string_view kBlockOpening = R"lua(
-- Blocking (LimiterOptions::block_for): a refusal blocks the key for ARGV[#ARGV] microseconds, held in
-- KEYS[2] (in the key's hash slot) as the time it ends. While it lasts every request is refused and
-- records nothing, answered with allowed = -1 and a retry_after that waits out the block and then the
-- window; a peek (cost 0) reports the window as it is.
local block_key, block_for = KEYS[2], tonumber(ARGV[#ARGV])
local blocked_until = tonumber(redis.call('GET', block_key) or 0)
local blocked = now < blocked_until
if blocked then record = false end

-- The decision as it would be without blocking (record = false while blocked, so it writes nothing).
local function decideUnblocked()
)lua"sv;

inline constexpr std::string_view kBlockClosing = R"lua(
end

local answer = decideUnblocked()
if cost == 0 then return answer end
if blocked then
  answer[1], answer[3] = -1, math.max(answer[3], blocked_until - now)
  if answer[2] > 0 then answer[2] = 0 end  -- while blocked the key admits nothing
  return answer
end
if answer[1] == 0 then
  -- This refusal blocks the key.
  redis.call('SET', block_key, text(now + block_for), 'PX', math.ceil(block_for / 1000))
  answer[3] = math.max(answer[3], block_for)
end
return answer
)lua"sv;

// `script` (which opens with the prelude) as a blocking limiter runs it: its part after the prelude
// inside kBlockOpening and kBlockClosing.
inline std::string blockingText(std::string_view script) {
  const std::string& prelude = scriptPrelude();
  if (script.substr(0, prelude.size()) != prelude) {
    throw InvalidArgument("swl: a script to run blocking does not open with the prelude");
  }
  return std::string(prelude).append(kBlockOpening).append(script.substr(prelude.size())).append(kBlockClosing);
}

// Which of an algorithm's scripts: the one its limiters decide with, or, for an algorithm that has them
// (the log), the one that settles a reservation or the one that leases units.
enum class ScriptRole { decide, settle, lease };

// The name and the own part (after the prelude and the algorithm's shared parts) of `role`'s script.
template <class Algorithm, ScriptRole role>
constexpr std::array<std::string_view, 2> nameAndPartOf() {
  if constexpr (role == ScriptRole::decide) return {Algorithm::kScriptName, Algorithm::kScript};
  if constexpr (role == ScriptRole::settle) return {Algorithm::kSettleScriptName, Algorithm::kSettleScript};
  if constexpr (role == ScriptRole::lease) return {Algorithm::kLeaseScriptName, Algorithm::kLeaseScript};
}

// The module's command that can decide in place of the algorithm's script (Algorithm::kNativeCommand),
// or empty: only a decision has one.
template <class Algorithm, ScriptRole role>
constexpr std::string_view nativeCommandOf() {
  if constexpr (role == ScriptRole::decide && hasNativeCommand<Algorithm>) {
    return Algorithm::kNativeCommand;
  } else {
    return {};
  }
}

// The one Script that plays `role` for the algorithm's limiters, or for a blocking limiter's
// (LimiterOptions::block_for) the same run inside kBlockOpening and kBlockClosing; each made on first use.
// (A Script views its text, so each text is kept beside it.)
template <class Algorithm, ScriptRole role = ScriptRole::decide>
const Script& scriptOf(bool blocking = false) {
  constexpr auto name_and_part = nameAndPartOf<Algorithm, role>();
  static const std::string text = scriptText<Algorithm>(name_and_part[1], role == ScriptRole::decide);
  static const Script script(name_and_part[0], text, nativeCommandOf<Algorithm, role>());
  if (!blocking) return script;
  static const std::string blocking_text = blockingText(text);
  static const Script blocking_script(std::string{name_and_part[0]} + "_blocking", blocking_text);
  return blocking_script;
}

// The key beside `redis_key` that keeps something of its own (its block, its holds), named
// `redis_key` + `suffix` in its hash slot (a script's keys must share one on a cluster): beside its hash
// tag when it has one, or else with the whole key as the tag.
inline std::string companionKeyOf(std::string_view redis_key, std::string_view suffix) {
  std::string beside = std::string(redis_key).append(suffix);
  if (hashedPart(redis_key) != redis_key) return beside;
  std::string tagged = "{" + std::string(redis_key) + "}" + std::string(suffix);
  // A key holding a '}' but no hash tag cannot be one; beside it is right on a single server.
  return hashSlot(tagged) == hashSlot(redis_key) ? tagged : beside;
}

// The key that holds `redis_key`'s block.
inline std::string blockKeyOf(std::string_view redis_key) { return companionKeyOf(redis_key, ":blocked"); }

// LimiterOptions::block_for as a script takes it: nothing when off, or its microseconds.
inline std::optional<IntegerText> blockLength(std::chrono::microseconds block_for, std::string_view limiter) {
  if (block_for.count() == 0) return std::nullopt;
  if (block_for < std::chrono::milliseconds(1) || block_for.count() >= kLargestExact) {
    throw InvalidArgument(std::string(limiter) + ": a block_for of " + std::to_string(block_for.count()) +
                          " us is not in 1 ms..2^53 us (0 turns blocking off)");
  }
  return IntegerText(block_for.count());
}

// Deletes a key; a script, so that every RedisClient (a cluster included) runs it like the others.
inline const Script& forgetScript() {
  static const Script forget("forget", "return redis.call('DEL', KEYS[1])");
  return forget;
}

// The arguments every script reads in its prelude, in ARGV order: kOneKeyArguments says what each one
// means. A script's own arguments follow from ARGV[8].
struct PreludeArguments {
  std::string_view window, limit, cost, now, member, ttl, count_rejected;
};

// What a blocking limiter's call adds (LimiterOptions::block_for): the key that holds the block, and the
// block's length in microseconds as text.
struct BlockArguments {
  std::string_view key;
  std::string_view length;
};

// The call of `script` on `key` with the prelude's arguments and then `own` (and, for a blocking
// limiter's script, the block's key and length): the one place an algorithm's call is laid out, written
// straight into the call as hiredis sends it. Every text it views must outlive the call.
inline ScriptCall preludeCall(const Script& script, const std::string_view& key, const PreludeArguments& prelude,
                              std::initializer_list<std::string_view> own = {},
                              const std::optional<BlockArguments>& block = std::nullopt) {
  const std::string_view keys[] = {key, block ? block->key : std::string_view()};
  // In the places the wire format gives them (wire.hpp), which the module reads too.
  std::array<std::string_view, wire::kDecideArguments> in_order{};
  in_order[wire::kWindowArgument - 1] = prelude.window;
  in_order[wire::kLimitArgument - 1] = prelude.limit;
  in_order[wire::kCostArgument - 1] = prelude.cost;
  in_order[wire::kNowArgument - 1] = prelude.now;
  in_order[wire::kMemberArgument - 1] = prelude.member;
  in_order[wire::kTtlArgument - 1] = prelude.ttl;
  in_order[wire::kCountRejectedArgument - 1] = prelude.count_rejected;
  ScriptCall call(script, keys, block ? 2 : 1, in_order.data(), in_order.size());
  call.append(own);
  if (block) call.append({block->length});
  if (prelude.now == kNoDeadline) call.carryDeadlineIn(wire::kNowArgument);
  return call;
}

// For algorithms whose scripts multiply counts by the window to stay in integers: that product must be exact.
inline void checkScaledExact(const Limit& limit, std::string_view limiter) {
  if (limit.max_requests > (kLargestExact - 1) / limit.window.count()) {
    throw InvalidArgument(std::string(limiter) + ": a limit of " + std::to_string(limit.max_requests) + " per " +
                          std::to_string(limit.window.count()) +
                          " us is too fine to count exactly (limit x window must stay below 2^53 microseconds); "
                          "use a shorter window or a SlidingWindowLimiter");
  }
}

}  // namespace swl::detail
