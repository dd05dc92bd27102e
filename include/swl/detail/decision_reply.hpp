#pragma once
// Turns a script's reply into Decisions, trusting nothing: a reply of the wrong shape or with values
// no correct script could produce is a ProtocolError, never a guess.

#include <swl/detail/hiredis.hpp>
#include <swl/error.hpp>
#include <swl/limit.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

// A multi-window script's reply (MultiLimiter): {allowed, then per rule: remaining, retry_after_us,
// reset_after_us}, as one Decision per rule, rule i under limits[i]. A rule admitted iff its retry_after
// is 0, and `allowed` must say whether every rule did. `rules` is 1..kMaxRules (the script's key limit).
template <std::size_t kMaxRules>
std::vector<Decision> decodeRuleDecisions(const redisReply& reply, const std::int64_t* limits, std::size_t rules) {
  if (rules == 0 || rules > kMaxRules) {
    throw InvalidArgument("swl: a decision of " + std::to_string(rules) + " rules; one decision takes 1 to " +
                          std::to_string(kMaxRules));
  }
  std::array<std::int64_t, 1 + 3 * kMaxRules> values;
  readIntegers(reply, values.data(), 1 + 3 * rules);
  std::vector<Decision> decisions;
  decisions.reserve(rules);
  bool every_rule_admitted = true;
  for (std::size_t i = 0; i < rules; ++i) {
    const std::int64_t* rule = &values[1 + 3 * i];
    decisions.push_back(checkedDecision(rule[1] == 0 ? 1 : 0, rule[0], rule[1], rule[2], limits[i]));
    every_rule_admitted = every_rule_admitted && decisions.back().allowed;
  }
  if (values[0] != (every_rule_admitted ? 1 : 0)) {
    throw badReply("allowed = " + std::to_string(values[0]) + " against its rules' answers");
  }
  return decisions;
}

}  // namespace swl::detail
