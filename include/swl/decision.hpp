#pragma once
/// \file
/// The plain values of the API: what a limiter enforces (Limit), what a caller asks for (AcquireRequest),
/// what it answers (Decision, and Outcome where an answer cannot be thrown) and what a key has used (Usage).

#include <swl/borrowed_text.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

namespace swl {

/// "max_requests per window". The window is kept in microseconds, so any std::chrono duration of
/// microsecond resolution or coarser converts implicitly and exactly; a finer one does not compile.
struct Limit {
  /// The most units the window admits.
  std::int64_t max_requests = 0;
  /// How far back the limit looks.
  std::chrono::microseconds window{0};
};

/// Equal when both fields are: a call's limit is then the limiter's own.
inline bool operator==(const Limit& a, const Limit& b) noexcept {
  return a.max_requests == b.max_requests && a.window == b.window;
}
/// The negation of operator==.
inline bool operator!=(const Limit& a, const Limit& b) noexcept { return !(a == b); }

/// One request of a batch (tryAcquireMany): `cost` units for `key`, under `limit` when one is given (a
/// limit chosen per call, as tryAcquire(key, cost, limit) takes) or else the limiter's own. The key is
/// viewed, not copied: a temporary string does not compile (BorrowedText).
struct AcquireRequest {
  /// The caller's key, viewed: it must outlive the call.
  BorrowedText key;
  /// Units this request asks for.
  std::int64_t cost = 1;
  /// A limit chosen for this request; none: the limiter's own.
  std::optional<Limit> limit = std::nullopt;

  /// The limit this request is decided under, given the limiter's own.
  const Limit& limitOr(const Limit& own) const noexcept { return limit ? *limit : own; }
};

/// Which tier of a limiter produced a Decision.
enum class Tier {
  redis,          ///< the shared window in Redis
  fail_open,      ///< Redis could not answer; the failure policy admitted
  fail_closed,    ///< Redis could not answer; the failure policy refused (or an error left no decision)
  in_memory,      ///< a LocalLimiter: this process's own window, no Redis involved
  blocked_cache,  ///< refused locally: Redis refused this key moments ago and its retry_after has not passed
  insurance,      ///< Redis could not answer; this instance's share of the limit, kept in memory, decided
  lease,          ///< admitted in this process from units leased out of the shared window (LeasingLimiter)
  allow_list,     ///< admitted without being counted: the key is on the access list's allow list
  deny_list,      ///< refused without being counted: the key is on the access list's deny list
  blocked,        ///< refused without being counted: a refusal blocked the key (LimiterOptions::block_for)
};

/// "redis", "fail_open", ...: for logs and metric labels.
constexpr std::string_view toString(Tier tier) noexcept {
  switch (tier) {
    case Tier::redis:
      return "redis";
    case Tier::fail_open:
      return "fail_open";
    case Tier::fail_closed:
      return "fail_closed";
    case Tier::in_memory:
      return "in_memory";
    case Tier::blocked_cache:
      return "blocked_cache";
    case Tier::insurance:
      return "insurance";
    case Tier::lease:
      return "lease";
    case Tier::allow_list:
      return "allow_list";
    case Tier::deny_list:
      return "deny_list";
    case Tier::blocked:
      return "blocked";
  }
  return "unknown";
}

/// A limiter's answer to one request: whether it is admitted, and what the window has left.
struct Decision {
  /// Whether the request is admitted (shadow mode admits refusals: see shadow_rejected).
  bool allowed = false;
  /// The limit it was decided under (its max_requests).
  std::int64_t limit = 0;
  /// What the window still admits after this decision.
  std::int64_t remaining = 0;
  /// Zero when admitted; otherwise the exact time until enough entries leave the window for the same
  /// cost. A caller that waits this long and retries is admitted unless others took the room first.
  /// (A shadow refusal, admitted, keeps the wait its refusal would have given.)
  /// For an HTTP Retry-After header round it up: std::chrono::ceil<std::chrono::seconds>(retry_after).
  std::chrono::microseconds retry_after{0};
  /// Time until the window holds no entry for this key at all.
  std::chrono::microseconds reset_after{0};
  /// Who decided: Redis, the failure policy, or a local tier.
  Tier tier = Tier::redis;
  /// Admitted only because the limiter runs in shadow mode (Enforcement::shadow): enforcing, it would
  /// have refused, and nothing was recorded for it. A real refusal has allowed == false.
  bool shadow_rejected = false;

  /// `allowed`: `if (limiter.tryAcquire(key))` reads as it means.
  explicit operator bool() const noexcept { return allowed; }
};

/// A decision that could not be thrown. Batches (one failed key must not hide the others' decisions) and
/// async callbacks (no caller stack to throw into) hand back an Outcome per request.
struct Outcome {
  /// What to do with the request: Redis's answer, the failure policy's, or a denial when `error` is set.
  Decision decision;
  /// Set when the request was invalid (InvalidArgument), or when Redis could not decide and the failure
  /// policy is FailurePolicy::throw_error; what tryAcquire would have thrown.
  std::exception_ptr error;

  /// Whether there is a decision, not an error.
  bool ok() const noexcept { return !error; }

  /// The decision, or the error rethrown: the batch or callback twin of calling tryAcquire.
  const Decision& value() const {
    if (error) std::rethrow_exception(error);
    return decision;
  }
};

/// What settle() needs to find a reservation again: the entry reserve() recorded, its units and the limit
/// it was decided under (its window is the one the entry counts in). Empty (units 0) when nothing was
/// recorded: the reservation was refused (and rejections are not counted), or a failure policy answered.
struct Receipt {
  /// The Redis key of the reserved entry.
  std::string redis_key;
  /// The entry's member in that key's log.
  std::string member;
  /// The units the entry was recorded with; 0: nothing to settle.
  std::int64_t units = 0;
  /// The limit the reservation was decided under.
  Limit limit;

  /// Whether anything was recorded, so that settle() has an entry to find.
  explicit operator bool() const noexcept { return units > 0; }
};

/// reserve()'s answer: the decision, and the receipt to settle the real cost with once it is known.
struct Reservation {
  /// Whether the reservation was admitted, as tryAcquire would answer.
  Decision decision;
  /// What settle() takes, once the real cost is known.
  Receipt receipt;

  /// Whether the reservation was admitted.
  explicit operator bool() const noexcept { return decision.allowed; }
};

/// What a key has used of its limit, read without consuming anything (peek).
struct Usage {
  /// The limit it was read under (its max_requests).
  std::int64_t limit = 0;
  /// Units in the current window (for the approximate algorithms, their estimate rounded up).
  std::int64_t used = 0;
  /// What the window still admits.
  std::int64_t remaining = 0;
  /// Time until the window holds nothing for this key.
  std::chrono::microseconds reset_after{0};
};

}  // namespace swl
