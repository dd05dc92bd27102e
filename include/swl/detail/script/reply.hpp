#pragma once
/// \file
/// A limiter script's reply read as a Decision or a Usage, trusting nothing: a reply no correct script
/// could send is a ProtocolError naming what was wrong, never a guess. Plain functions, no I/O: the
/// blocking, async, multi-rule and concurrency limiters all read their replies here.

#include <swl/decision.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>

namespace swl::detail {

inline ProtocolError badReply(const std::string& why) { return ProtocolError("a limiter script replied with " + why); }

// The reply's integers, exactly `count` of them, into `values`.
inline void readIntegers(ReplyView reply, std::int64_t* values, std::size_t count) {
  if (!reply.isArray() || reply.size() != count) {
    throw badReply("something other than an array of " + std::to_string(count) + " integers");
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (!reply[i].isInteger()) throw badReply("a non-integer element");
    values[i] = reply[i].integer();
  }
}

// One decision from {allowed, remaining, retry_after_us, reset_after_us} under `limit`, trusting nothing:
// values no correct script could produce are a ProtocolError, never a guess. A window holds at most
// 2^53 units, so `remaining` (limit minus that) lies in -2^53..limit; the Decision's is at least 0.
// allowed = -1 is a refusal because the key is blocked (LimiterOptions::block_for): Tier::blocked.
inline Decision checkedDecision(std::int64_t allowed, std::int64_t remaining, std::int64_t retry_after_us,
                                std::int64_t reset_after_us, std::int64_t limit) {
  if (allowed < -1 || allowed > 1) throw badReply("allowed = " + std::to_string(allowed));
  const bool blocked = allowed == -1;
  if (blocked) allowed = 0;
  if (remaining < -kLargestExact || remaining > limit) throw badReply("remaining = " + std::to_string(remaining));
  if (retry_after_us < 0 || (allowed == 1 && retry_after_us != 0) || (allowed == 0 && retry_after_us == 0)) {
    throw badReply("retry_after = " + std::to_string(retry_after_us) + " us for allowed = " + std::to_string(allowed));
  }
  if (reset_after_us < 0) throw badReply("reset_after = " + std::to_string(reset_after_us) + " us");

  Decision decision;
  decision.allowed = allowed == 1;
  decision.limit = limit;
  decision.remaining = std::max<std::int64_t>(0, remaining);
  decision.retry_after = std::chrono::microseconds(retry_after_us);
  decision.reset_after = std::chrono::microseconds(reset_after_us);
  decision.tier = blocked ? Tier::blocked : Tier::redis;
  return decision;
}

inline Decision decodeDecision(ReplyView reply, std::int64_t limit) {
  std::int64_t values[4];
  readIntegers(reply, values, 4);
  return checkedDecision(values[0], values[1], values[2], values[3], limit);
}

// A call's end, for the limiters answered through callbacks: its reply read as a Decision, or the failure
// that kept it from one (`error`, the call's, or the error of a reply that does not read as one).
inline Outcome outcomeOf(ReplyView reply, std::exception_ptr error, std::int64_t limit) {
  if (!error) {
    try {
      return {decodeDecision(reply, limit), nullptr};
    } catch (const Error&) {
      error = std::current_exception();
    }
  }
  return {Decision(), std::move(error)};
}

// A peek's reply as Usage: what the window holds, past the limit too (counted refusals).
inline Usage decodeUsage(ReplyView reply, std::int64_t limit) {
  std::int64_t values[4];
  readIntegers(reply, values, 4);
  const Decision seen = checkedDecision(values[0], values[1], values[2], values[3], limit);
  return {limit, limit - values[1], seen.remaining, seen.reset_after};
}

}  // namespace swl::detail
