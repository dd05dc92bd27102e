#pragma once
// Turns the script's reply into a Decision, trusting nothing: a reply of the wrong shape or with values
// no correct script could produce is a ProtocolError, never a guess.

#include <swl/detail/hiredis.hpp>
#include <swl/error.hpp>
#include <swl/limit.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace swl::detail {

inline Decision decodeDecision(const redisReply& reply, std::int64_t limit) {
  auto fail = [](const std::string& why) -> ProtocolError {
    return ProtocolError("the sliding window script replied with " + why);
  };
  if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 4 || reply.element == nullptr) {
    throw fail("something other than an array of 4 integers");
  }
  std::int64_t values[4];
  for (std::size_t i = 0; i < 4; ++i) {
    const redisReply* element = reply.element[i];
    if (element == nullptr || element->type != REDIS_REPLY_INTEGER) throw fail("a non-integer element");
    values[i] = element->integer;
  }
  const auto [allowed, remaining, retry_after_us, reset_after_us] = values;
  if (allowed != 0 && allowed != 1) throw fail("allowed = " + std::to_string(allowed));
  if (remaining < 0 || remaining > limit) throw fail("remaining = " + std::to_string(remaining));
  if (retry_after_us < 0 || (allowed == 1 && retry_after_us != 0) || (allowed == 0 && retry_after_us == 0)) {
    throw fail("retry_after = " + std::to_string(retry_after_us) + " us for allowed = " + std::to_string(allowed));
  }
  if (reset_after_us < 0) throw fail("reset_after = " + std::to_string(reset_after_us) + " us");

  Decision decision;
  decision.allowed = allowed == 1;
  decision.limit = limit;
  decision.remaining = remaining;
  decision.retry_after = std::chrono::microseconds(retry_after_us);
  decision.reset_after = std::chrono::microseconds(reset_after_us);
  decision.source = DecisionSource::redis;
  return decision;
}

}  // namespace swl::detail
