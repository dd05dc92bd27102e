#pragma once
/// \file
/// Run-time choices every limiter shares: what to answer when Redis cannot, whose clock to trust, whether
/// rejected requests count, and who watches (observer.hpp).

#include <swl/access_list.hpp>
#include <swl/observer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

namespace swl {

namespace testing {
class ManualClock;
}  // namespace testing

/// What tryAcquire does when Redis cannot answer (refused, timeout, broken connection, error reply).
enum class FailurePolicy {
  throw_error,  ///< rethrow the swl::ConnectionError / swl::ReplyError (the default: no silent guess)
  allow,        ///< fail open: admit, Decision::tier == Tier::fail_open
  deny,         ///< fail closed: reject, Decision::tier == Tier::fail_closed
};

/// Whether a limiter's refusals are carried out. Shadow mode rolls a limit out safely: every decision is
/// made, recorded and reported as if enforced, but a request the limit would refuse is admitted, marked
/// Decision::shadow_rejected (Verdict::shadow_rejected for the observer). Switching to enforce changes
/// nothing else. Errors still follow the FailurePolicy: pair shadow with FailurePolicy::allow when the
/// rollout must never turn a request away.
enum class Enforcement {
  enforce,  ///< a refused request is refused (the default)
  shadow,   ///< a refused request is admitted and marked; the window records it as the refusal it was
};

/// Whether a rejected request is recorded in the window like an admitted one.
enum class RejectedRequests {
  not_counted,  ///< a rejected request leaves the window as it was (the default)
  counted,      ///< a rejected request is recorded too, so a client that keeps hammering stays locked out
};

/// Where "now" comes from. By default the script reads Redis's TIME, so app servers with skewed clocks
/// still share one timeline. The host's clock and a manual clock (deterministic tests) are the options.
class Clock {
 public:
  /// Redis's TIME, read inside the script. The default.
  static Clock redis() { return Clock({}); }

  /// This host's system clock, in microseconds since the epoch.
  static Clock system() {
    return Clock([] {
      return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch());
    });
  }

  /// A clock a test moves by hand (defined in swl/testing/manual_clock.hpp, which a test includes).
  inline static Clock manual(testing::ManualClock clock);

  /// Whether this is Clock::redis(): the script then reads Redis's TIME, and now() has nothing to give.
  bool isRedisTime() const noexcept { return !now_; }

  /// The client-side time; only for clocks that are not Redis's.
  std::chrono::microseconds now() const { return now_(); }

 private:
  explicit Clock(std::function<std::chrono::microseconds()> now) : now_(std::move(now)) {}

  std::function<std::chrono::microseconds()> now_;
};

/// The run-time choices every limiter takes; the defaults are the safe ones.
struct LimiterOptions {
  /// What to answer when Redis cannot.
  FailurePolicy on_failure = FailurePolicy::throw_error;
  /// Whose clock is "now".
  Clock clock = Clock::redis();
  /// Whether refusals are recorded too.
  RejectedRequests rejected = RejectedRequests::not_counted;
  Observer observer;  ///< sees every decision and error (see observer.hpp); none by default
  /// Whether refusals are carried out, or only reported (shadow mode).
  Enforcement enforcement = Enforcement::enforce;
  /// Keys answered without deciding: allowed ones admitted, denied ones refused (access_list.hpp). None by
  /// default; keep the shared_ptr to change the lists while the limiter runs.
  std::shared_ptr<const AccessList> access;
  /// A refusal blocks its key this long, in Redis, so every process refuses it (Decision::tier ==
  /// Tier::blocked) until the block ends, counting nothing meanwhile. 0, the default, blocks nothing;
  /// otherwise 1 ms or more. docs/limits.md ("Blocking a key that passed its limit") says where it applies.
  std::chrono::microseconds block_for{0};
};

}  // namespace swl
