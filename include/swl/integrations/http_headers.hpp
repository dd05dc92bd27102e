#pragma once
/// \file
/// HTTP header values for decisions, for any HTTP framework: 429's Retry-After, the IETF RateLimit-Policy
/// and RateLimit structured fields (draft-ietf-httpapi-ratelimit-headers), and the widespread
/// X-RateLimit-Limit/Remaining/Reset.
///
///   RateLimit-Policy: "client";q=5;w=10, "route";q=20;w=10     quota q per window w seconds, per policy
///   RateLimit: "client";r=4;t=10, "route";r=19;t=10            remaining r, reset in t seconds, per policy
///   Retry-After: 3                                             seconds, on a 429 only
///
/// Every time is a delay in whole seconds, rounded up (a client that waits that long is not early),
/// never an epoch. Policy names are sf-strings; a name with a character HTTP cannot carry is refused.

#include <swl/decision.hpp>
#include <swl/error.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace swl {

/// One policy as a response reports it: its name, its limit and the key's decision under it.
struct PolicyReport {
  /// The policy's name, sent as an sf-string: printable ASCII only. Viewed: a temporary string does not
  /// compile (BorrowedText).
  BorrowedText name;
  /// The policy's limit: the quota (q) and window (w) of RateLimit-Policy.
  Limit limit;
  /// The key's decision under it: the remaining (r) and reset (t) of RateLimit.
  Decision decision;
};

namespace detail {

inline std::int64_t ceilSeconds(std::chrono::microseconds delay) {
  return delay.count() <= 0 ? 0 : std::chrono::ceil<std::chrono::seconds>(delay).count();
}

// An sf-string: printable ASCII in quotes, with '"' and '\' escaped.
inline std::string structuredString(std::string_view text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c < 0x20 || c > 0x7e) {
      throw InvalidArgument("swl: the policy name '" + std::string(text) +
                            "' holds a character an HTTP structured field cannot carry");
    }
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted += '"';
}

template <class Item>
std::string structuredList(const std::vector<PolicyReport>& policies, Item item) {
  std::string list;
  for (const PolicyReport& policy : policies) {
    if (!list.empty()) list += ", ";
    list += structuredString(policy.name);
    list += item(policy);
  }
  return list;
}

}  // namespace detail

/// Retry-After for a refused decision: at least 1, since 0 would invite an immediate retry.
inline std::string retryAfterValue(const Decision& decision) {
  const std::int64_t seconds = detail::ceilSeconds(decision.retry_after);
  return std::to_string(seconds < 1 ? 1 : seconds);
}

/// The RateLimit-Policy value: each policy's quota and window in seconds, `"name";q=100;w=10`.
inline std::string rateLimitPolicyValue(const std::vector<PolicyReport>& policies) {
  return detail::structuredList(policies, [](const PolicyReport& policy) {
    return ";q=" + std::to_string(policy.limit.max_requests) +
           ";w=" + std::to_string(detail::ceilSeconds(policy.limit.window));
  });
}

/// The RateLimit value: each policy's remaining units and seconds until reset, `"name";r=42;t=7`.
inline std::string rateLimitValue(const std::vector<PolicyReport>& policies) {
  return detail::structuredList(policies, [](const PolicyReport& policy) {
    return ";r=" + std::to_string(policy.decision.remaining) +
           ";t=" + std::to_string(detail::ceilSeconds(policy.decision.reset_after));
  });
}

/// The same for a response under one policy, the common case: rateLimitValue({"api", limit, decision}).
inline std::string rateLimitPolicyValue(const PolicyReport& policy) {
  return rateLimitPolicyValue(std::vector<PolicyReport>{policy});
}

/// The same for a response under one policy.
inline std::string rateLimitValue(const PolicyReport& policy) {
  return rateLimitValue(std::vector<PolicyReport>{policy});
}

}  // namespace swl
