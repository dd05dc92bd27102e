#pragma once
// Turns a script's reply into Decisions, trusting nothing: a reply of the wrong shape or with values
// no correct script could produce is a ProtocolError, never a guess.

#include <swl/detail/hiredis.hpp>
#include <swl/error.hpp>
#include <swl/limit.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace swl::detail {

inline ProtocolError badReply(const std::string& why) { return ProtocolError("a limiter script replied with " + why); }

// The reply's integers, exactly `count` of them, into `values`.
inline void readIntegers(const redisReply& reply, std::int64_t* values, std::size_t count) {
  if (reply.type != REDIS_REPLY_ARRAY || reply.elements != count || reply.element == nullptr) {
    throw badReply("something other than an array of " + std::to_string(count) + " integers");
  }
  for (std::size_t i = 0; i < count; ++i) {
    const redisReply* element = reply.element[i];
    if (element == nullptr || element->type != REDIS_REPLY_INTEGER) throw badReply("a non-integer element");
    values[i] = element->integer;
  }
}

// One decision from {allowed, remaining, retry_after_us, reset_after_us} under `limit`.
inline Decision checkedDecision(std::int64_t allowed, std::int64_t remaining, std::int64_t retry_after_us,
                                std::int64_t reset_after_us, std::int64_t limit) {
  if (allowed != 0 && allowed != 1) throw badReply("allowed = " + std::to_string(allowed));
  if (remaining < 0 || remaining > limit) throw badReply("remaining = " + std::to_string(remaining));
  if (retry_after_us < 0 || (allowed == 1 && retry_after_us != 0) || (allowed == 0 && retry_after_us == 0)) {
    throw badReply("retry_after = " + std::to_string(retry_after_us) + " us for allowed = " + std::to_string(allowed));
  }
  if (reset_after_us < 0) throw badReply("reset_after = " + std::to_string(reset_after_us) + " us");

  Decision decision;
  decision.allowed = allowed == 1;
  decision.limit = limit;
  decision.remaining = remaining;
  decision.retry_after = std::chrono::microseconds(retry_after_us);
  decision.reset_after = std::chrono::microseconds(reset_after_us);
  decision.source = DecisionSource::redis;
  return decision;
}

inline Decision decodeDecision(const redisReply& reply, std::int64_t limit) {
  std::int64_t values[4];
  readIntegers(reply, values, 4);
  return checkedDecision(values[0], values[1], values[2], values[3], limit);
}

}  // namespace swl::detail
