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
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace swl::native {

// An integer argument, whole and in range, or a clear error naming it.
inline std::int64_t integerArgument(std::string_view text, std::string_view what) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value <= -kTimesEnd || value >= kTimesEnd) {
    throw CommandError("ERR swl: the " + std::string(what) + " '" + std::string(text) +
                       "' is not an integer below 2^53");
  }
  return value;
}

// The clock a call decides at, from its `now` argument: '' for Redis's own; '-' and 16 digits for Redis's
// own and the call's deadline on it (0: none), checked before anything is written (the scripts' prelude).
template <class RedisNow>
void readClock(Request& request, std::string_view now_text, const RedisNow& redis_now) {
  std::int64_t deadline = 0;
  if (!now_text.empty() && now_text[0] < '0') {
    deadline = -integerArgument(now_text, "deadline");
    now_text = "";
  }
  request.redis_time = now_text.empty();
  request.now = request.redis_time ? redis_now() : integerArgument(now_text, "time");
  if (deadline > 0 && request.now > deadline) {
    throw CommandError(std::string(wire::kExpiredError) + " swl: the call ran " +
                       std::to_string(request.now - deadline) + " us past its deadline; nothing recorded");
  }
}

// A limit's window and its number, and the call's cost and the set's ttl when given, read and checked.
inline void readLimit(Request& request, std::string_view window, std::string_view limit,
                      std::optional<std::string_view> cost, std::optional<std::string_view> ttl) {
  request.window_text = window;
  request.window = integerArgument(window, "window");
  request.limit = integerArgument(limit, "limit");
  if (request.window <= 0) throw CommandError("ERR swl: the window must be at least 1 us");
  if (cost) request.cost = integerArgument(*cost, "cost");
  if (request.cost < 0) throw CommandError("ERR swl: a cost cannot be below 0");
  if (ttl && !ttl->empty()) request.ttl = integerArgument(*ttl, "ttl");
  if (request.ttl && *request.ttl <= 0) throw CommandError("ERR swl: a ttl must be at least 1 ms");
}

// SWL.DECIDE's request: the log's script's ARGV.
template <class Argument, class RedisNow>
Request decideRequest(const Argument& argument, const RedisNow& redis_now) {
  Request request;
  readLimit(request, *argument(wire::kWindowArgument), *argument(wire::kLimitArgument), argument(wire::kCostArgument),
            argument(wire::kTtlArgument));
  readClock(request, argument(wire::kNowArgument).value_or(""), redis_now);
  request.member = argument(wire::kMemberArgument).value_or("");
  request.count_rejected = argument(wire::kCountRejectedArgument).value_or("") == "1";
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
    request.member = *argument(wire::kMultiMemberArgument);
  }
  return requests;
}

}  // namespace swl::native
