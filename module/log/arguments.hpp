#pragma once
// SWL.DECIDE's and SWL.DECIDEALL's arguments read from the words a client sent, and checked: the log's
// script's ARGV and MultiLimiter's, in the places the wire format gives them (swl/detail/script/wire.hpp).
// Each is an argument's text, read through `argument(i)` (ARGV[i], or nullopt past the last one sent), and
// Redis's own clock through `redis_now()`, read only when a call decides on it.

#include "layout.hpp"
#include "request.hpp"
#include "set.hpp"

#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace swl::native {

// An argument as an error shows it: its first 64 bytes at most (a client may send megabytes).
inline std::string shown(std::string_view text) {
  return text.size() <= 64 ? std::string(text) : std::string(text.substr(0, 64)) + "...";
}

// An integer argument, whole, at least `least` and below 2^53 (`unit` says in what), or a clear error
// naming it. The library never sends another: a command anyone can send checks each argument itself.
inline std::int64_t integerArgument(std::string_view text, std::string_view what, std::int64_t least = 1 - kTimesEnd,
                                    std::string_view unit = {}) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value <= -kTimesEnd || value >= kTimesEnd) {
    throw CommandError("ERR swl: the " + std::string(what) + " '" + shown(text) + "' is not an integer below 2^53");
  }
  if (value < least) {
    throw CommandError("ERR swl: the " + std::string(what) + " '" + shown(text) + "' must be at least " +
                       std::to_string(least) + (unit.empty() ? "" : " ") + std::string(unit));
  }
  return value;
}

// The clock a call decides at, from its `now` argument: '' for Redis's own; '-' and 16 digits for Redis's
// own and the call's deadline on it (0: none), checked before anything is written (the scripts' prelude).
template <class RedisNow>
void readClock(Request& request, std::string_view now_text, const RedisNow& redis_now) {
  std::int64_t deadline = 0;
  if (!now_text.empty() && now_text[0] == '-') {
    deadline = integerArgument(now_text.substr(1), "deadline", 0, "us");
    now_text = "";
  }
  request.redis_time = now_text.empty();
  request.now = request.redis_time ? redis_now() : integerArgument(now_text, "time", 1, "us");
  if (deadline > 0 && request.now > deadline) {
    throw CommandError(std::string(wire::kExpiredError) + " swl: the call ran " +
                       std::to_string(request.now - deadline) + " us past its deadline; nothing recorded");
  }
}

// A limit's window and its number, and the call's cost (up to the limit: more could never be admitted)
// and the set's ttl when given, read and checked.
inline void readLimit(Request& request, std::string_view window, std::string_view limit,
                      std::optional<std::string_view> cost, std::optional<std::string_view> ttl) {
  request.window_text = window;
  request.window = integerArgument(window, "window", 1, "us");
  request.limit = integerArgument(limit, "limit", 1);
  if (cost) request.cost = integerArgument(*cost, "cost", 0);
  if (request.cost > request.limit) {
    throw CommandError("ERR swl: the cost '" + std::to_string(request.cost) + "' is above the limit '" +
                       std::to_string(request.limit) + "': it could never be admitted");
  }
  if (ttl && !ttl->empty()) request.ttl = integerArgument(*ttl, "ttl", 1, "ms");
}

// A member as the log can record it ('' for the millisecond timestamp): the log marks its own members with
// the bytes below ',', and swl 0.2's entries named their units after one of kOldUnitsSeparators
// (swl::detail::checkedMember refuses them in the library).
inline std::string_view memberArgument(std::string_view member) {
  for (const char byte : member) {
    if (static_cast<unsigned char>(byte) < ',' || wire::kOldUnitsSeparators.find(byte) != std::string_view::npos) {
      throw CommandError("ERR swl: the member '" + shown(member) +
                         "' holds a byte below ',' or an equals sign, which the log marks its own members with");
    }
  }
  return member;
}

// A flag that is one of `allowed` ('' included only when listed).
inline std::string_view flagArgument(std::string_view text, std::string_view what,
                                     std::initializer_list<std::string_view> allowed) {
  for (const std::string_view each : allowed) {
    if (text == each) return text;
  }
  std::string listed;
  for (const std::string_view each : allowed) listed += (listed.empty() ? "'" : ", '") + std::string(each) + "'";
  throw CommandError("ERR swl: the " + std::string(what) + " '" + shown(text) + "' is not one of " + listed);
}

// SWL.DECIDE's request: the log's script's ARGV.
template <class Argument, class RedisNow>
Request decideRequest(const Argument& argument, const RedisNow& redis_now) {
  Request request;
  readLimit(request, *argument(wire::kWindowArgument), *argument(wire::kLimitArgument), argument(wire::kCostArgument),
            argument(wire::kTtlArgument));
  readClock(request, argument(wire::kNowArgument).value_or(""), redis_now);
  request.member = memberArgument(argument(wire::kMemberArgument).value_or(""));
  request.count_rejected =
      flagArgument(argument(wire::kCountRejectedArgument).value_or(""), "count_rejected", {"", "0", "1"}) == "1";
  return request;
}

// The number of arguments SWL.DECIDEALL takes for `rules` rules, after its key count and its keys.
constexpr std::int64_t decideAllArguments(std::int64_t rules) {
  return wire::kSharedMultiArguments + wire::kMultiArgumentsPerRule * rules;
}

// SWL.DECIDEALL's requests, one per rule, from MultiLimiter's script's ARGV (`sent` of them), the rules
// all logs (counting '').
template <class Argument, class RedisNow>
std::vector<Request> decideAllRequests(std::int64_t rules, std::int64_t sent, const Argument& argument,
                                       const RedisNow& redis_now) {
  if (rules < 1 || sent != decideAllArguments(rules)) {
    throw CommandError("ERR swl: " + std::string(wire::kDecideAllCommand) +
                       " takes a key count, its keys, now, member, recording, then cost, window, limit, ttl and "
                       "counting for each key: " +
                       std::to_string(sent + rules + 1) + " arguments do not fit the count " + std::to_string(rules));
  }
  // One clock for every rule, read once, as the script reads TIME once.
  Request clock;
  readClock(clock, *argument(wire::kMultiNowArgument), redis_now);
  flagArgument(*argument(wire::kMultiRecordingArgument), "recording", {"0", "1", "-"});
  const std::string_view member = memberArgument(*argument(wire::kMultiMemberArgument));
  std::vector<Request> requests(static_cast<std::size_t>(rules));
  for (std::int64_t i = 0; i < rules; ++i) {
    const std::int64_t at = wire::kSharedMultiArguments + wire::kMultiArgumentsPerRule * i;
    const auto rule = [&](int offset) { return *argument(static_cast<int>(at) + offset); };
    Request& request = requests[static_cast<std::size_t>(i)];
    readLimit(request, rule(wire::kRuleWindowArgument), rule(wire::kRuleLimitArgument), rule(wire::kRuleCostArgument),
              rule(wire::kRuleTtlArgument));
    if (!rule(wire::kRuleCountingArgument).empty()) {
      throw CommandError("ERR swl: rule " + std::to_string(i + 1) +
                         " counts by periods or as a GCRA bucket, which only MultiLimiter's script decides");
    }
    request.now = clock.now;
    request.redis_time = clock.redis_time;
    request.member = member;
  }
  return requests;
}

}  // namespace swl::native
