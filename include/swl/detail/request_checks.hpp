#pragma once
// The checks every limiter (Redis or in-memory) applies to its Limit and to each request before it
// decides anything, so that all of them refuse the same input with the same words.

#include <swl/error.hpp>
#include <swl/limit.hpp>

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

// `limiter` and `call` name the call in the message ("swl::LocalLimiter", "tryAcquire"). Nothing is
// built unless the request is refused: this runs on every decision.
inline void checkRequest(std::string_view limiter, std::string_view call, std::string_view key, std::int64_t cost,
                         std::int64_t limit) {
  const auto refuse = [&](const std::string& why) {
    return InvalidArgument(std::string(limiter) + "::" + std::string(call) + ": " + why);
  };
  if (key.empty()) throw refuse("the key is empty");
  const auto of_key = [&] { return " (key '" + std::string(key) + "')"; };
  if (cost <= 0) throw refuse("cost " + std::to_string(cost) + " is not positive" + of_key());
  if (cost > limit) {
    throw refuse("cost " + std::to_string(cost) + " exceeds the limit of " + std::to_string(limit) +
                 " per window, so it could never be admitted" + of_key());
  }
}

}  // namespace swl::detail
