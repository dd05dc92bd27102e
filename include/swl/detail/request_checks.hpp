#pragma once
// The checks every limiter applies to its limits and requests before it sends anything, so that all of
// them refuse the same input with the same words.

#include <swl/decision.hpp>
#include <swl/detail/messages.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

namespace swl::detail {

// Scores are microseconds held in Lua doubles: counts and times must stay below 2^53 to be exact.
inline constexpr std::int64_t kLargestExact = std::int64_t{1} << 53;

inline Limit checkedLimit(Limit limit) {
  if (limit.max_requests <= 0 || limit.max_requests >= kLargestExact) {
    throw InvalidArgument("swl::Limit: max_requests " + std::to_string(limit.max_requests) + " is not in 1..2^53-1");
  }
  if (limit.window.count() <= 0 || limit.window.count() >= kLargestExact) {
    throw InvalidArgument("swl::Limit: window of " + std::to_string(limit.window.count()) +
                          " us is not positive (or not below 2^53 us)");
  }
  return limit;
}

// A limiter that cannot block a key (LimiterOptions::block_for) refuses the option, saying `why`.
inline void refuseBlockFor(const LimiterOptions& options, std::string_view limiter, std::string_view why) {
  if (options.block_for.count() == 0) return;
  throw InvalidArgument(std::string(limiter) + ": LimiterOptions::block_for is not taken here: " + std::string(why));
}

// The checks every limiter applies to a request before it decides anything, so that all of them refuse
// the same input with the same words. `limiter` and `call` name the call ("swl::LocalLimiter",
// "tryAcquire"), and `rule` a MultiLimiter's rule: its rules may share one key, and each has its own cost.
// Nothing is built unless the request is refused: this runs on every decision.
inline void checkRequest(std::string_view limiter, std::string_view call, std::string_view key, std::int64_t cost,
                         std::int64_t limit, std::string_view rule = {}) {
  const auto refuse = [&](const std::string& why) {
    std::string where = std::string(limiter) + "::" + std::string(call) + ": ";
    if (!rule.empty()) where += "rule " + detail::quoted(rule) + ": ";
    return InvalidArgument(where + why);
  };
  if (key.empty()) throw refuse("the key is empty");
  const auto of_key = [&] { return " (key " + detail::quoted(key) + ")"; };
  if (cost <= 0) throw refuse("cost " + std::to_string(cost) + " is not positive" + of_key());
  if (cost > limit) {
    throw refuse("cost " + std::to_string(cost) + " exceeds the limit of " + std::to_string(limit) +
                 " per window, so it could never be admitted" + of_key());
  }
}

// A member policy's member as the log can record it. The log's own members begin with, or hold, bytes
// below ',' ('!', '#', '*', '+', ')') and '=' (which marked units in sets of 0.2): a member holding one
// could be read as one of them.
inline std::string checkedMember(std::string_view limiter, std::string member) {
  const auto marks = [](char byte) { return static_cast<unsigned char>(byte) < ',' || byte == '='; };
  if (std::any_of(member.begin(), member.end(), marks)) {
    throw InvalidArgument(std::string(limiter) + ": the member policy made the member " + detail::quoted(member) +
                          ", which holds a byte below ',' (a space, a control byte or one of !\"#$%&'()*+) or '=': "
                          "the log marks its own members with those");
  }
  return member;
}

}  // namespace swl::detail
