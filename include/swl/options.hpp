#pragma once
/// \file
/// Run-time choices every limiter shares: what to answer when Redis cannot, whose clock to trust, whether
/// rejected requests count, and who watches (observer.hpp); and the options of the limiters that keep
/// something in memory (LocalLimiter, TieredLimiter, LeasingLimiter), so their cores in detail/ see them.

#include <swl/access_list.hpp>
#include <swl/observer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
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

/// How a LocalLimiter keeps its windows: whose clock, how many keys, and who observes.
struct LocalLimiterOptions {
  /// The host's clock by default; Clock::manual for tests. Clock::redis() is refused: there is no Redis.
  Clock clock = Clock::system();
  /// The most keys held at once; the least recently used goes first past it.
  std::size_t max_keys = 100'000;
  /// Sees every decision and error, as LimiterOptions::observer does.
  Observer observer;
  Enforcement enforcement = Enforcement::enforce;  ///< Enforcement::shadow admits what it would refuse
  std::shared_ptr<const AccessList> access;        ///< keys answered without deciding (access_list.hpp)
};

/// The local tiers of a TieredLimiter: a cache of refusals in front of Redis, insurance behind it.
struct TierOptions {
  /// The local cache of Redis's refusals, and how many keys it holds at most.
  bool cache_refusals = true;
  /// The most keys that refusal cache holds.
  std::size_t max_cached_refusals = 100'000;
  /// How many instances share the limit during an outage; 0 turns insurance off.
  int instances = 0;
  /// While insured, how often one call asks Redis whether it is back.
  std::chrono::milliseconds redis_retry_interval{1000};
  /// The most keys the insurance tier holds (see LocalLimiterOptions::max_keys).
  std::size_t max_insured_keys = 100'000;
};

/// How a LeasingLimiter leases: for how long, how large a share, for how many keys.
struct LeaseOptions {
  /// How long a lease may be used. 0 chooses window / 50, at most one second: a unit used at the start of
  /// a lease that then goes unused counts that much longer than it would have. Below a millisecond a
  /// lease saves too little, and every call goes to Redis.
  std::chrono::microseconds duration{0};
  /// A lease takes at most 1/room_divisor of what the window has room for (never less than the request
  /// in hand): the share left for the other instances. At least 2.
  std::int64_t room_divisor = 4;
  /// The most keys whose leases and demand are remembered; past it the least recently used are forgotten,
  /// and their unused units expire by themselves.
  std::size_t max_keys = 100'000;
};

}  // namespace swl
