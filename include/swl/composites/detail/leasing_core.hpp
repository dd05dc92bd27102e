#pragma once
// LeasingLimiter's core: units leased from the log, used in memory until the lease ends, given back.

#include <swl/algorithms/sliding_window.hpp>
#include <swl/decision.hpp>
#include <swl/detail/limiter/refusal.hpp>
#include <swl/detail/lru_map.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/options.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis_limiter.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace swl::detail {

// One key's state in one LeasingLimiter. Times are microseconds on the limiter's local clock.
struct KeyLease {
  // The lease in hand: its entry in Redis (with the limit it was leased under: a call under another
  // gives it back and leases anew), its units not yet used, and when its use must stop.
  Receipt receipt;
  std::int64_t left = 0;
  std::int64_t usable_until = 0;
  // Redis's last refusal, repeated for the same or a larger cost until it may change.
  Refusal refusal;
  // Demand: units asked since the last call to Redis, when that call was (-1: never), and the rate
  // the calls so far showed, in units per microsecond.
  std::int64_t asked = 0;
  std::int64_t last_call = -1;
  double rate = 0;
  // One lease call at a time per key: `calling` while it is out, `calls` counts those that came back,
  // and `failure` is the error the last one ended with, for those who waited on it.
  bool calling = false;
  std::uint64_t calls = 0;
  std::exception_ptr failure;

  bool holdsLease() const noexcept { return static_cast<bool>(receipt); }
};

template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class LeasingLimiterCore {
  using Log = SlidingWindowLimiter<KeyPolicy, MemberPolicy, TtlPolicy>;
  using LocalTime = std::int64_t;  // microseconds on localNow()'s clock

 public:
  static constexpr std::string_view kName = "swl::LeasingLimiter";

  LeasingLimiterCore(RedisClient& redis, Limit limit, LimiterOptions options = {}, LeaseOptions leases = {},
                     KeyPolicy keys = KeyPolicy(), MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : log_(redis, limit, checked(std::move(options)), std::move(keys), std::move(members), std::move(ttl)),
        leases_(checked(leases, log_.limit())),
        duration_(durationOf(leases_, log_.limit())),
        states_(leases_.max_keys) {}

  LeasingLimiterCore(const LeasingLimiterCore&) = delete;
  LeasingLimiterCore& operator=(const LeasingLimiterCore&) = delete;

  // Gives back what the leases did not use. An error leaves the rest to expire by themselves.
  ~LeasingLimiterCore() {
    try {
      giveBack();
    } catch (...) {  // a destructor cannot report; the units expire with their entries
    }
  }

  // What the key's window holds, leased units (used or not) included.
  Usage peek(std::string_view key, const Limit& limit) { return log_.peek(key, limit); }

  // Forgets the key here and in Redis. Other instances' leases on it are forgotten in Redis too, so
  // until they end (one lease duration) the key may admit up to their unused units beyond the limit.
  bool reset(std::string_view key) {
    validate(key, 1, limit());
    states_.with(key, [&](detail::LruMap<std::shared_ptr<detail::KeyLease>>& states) { return states.erase(key); });
    return log_.reset(key);
  }

  // Gives back what every lease has not used, now (one call per lease): for a service going quiet, or
  // on a timer, so that units leased for demand that did not come are free for others before the leases
  // end. Returns how many leases were given back; stops at the first error, which it throws.
  std::size_t giveBack() {
    std::vector<std::pair<Receipt, std::int64_t>> returned;  // each lease and the units it used
    states_.forEach([&](std::string_view, std::shared_ptr<detail::KeyLease>& state) {
      if (state->holdsLease() && !state->calling) returned.emplace_back(takeLease(*state));
    });
    for (const auto& [lease, used] : returned) log_.giveBack(lease, used);
    return returned.size();
  }

  const Limit& limit() const noexcept { return log_.limit(); }
  // The lease duration in use (LeaseOptions::duration, or the one it chose).
  std::chrono::microseconds leaseDuration() const noexcept { return duration_; }

  void validate(std::string_view key, std::int64_t cost, const Limit& limit) const {
    detail::checkRequest(kName, "tryAcquire", key, cost, limit.max_requests);
  }

  // Under the limiter's limit or one chosen for this call (a tenant's plan). A key's lease and cached
  // refusal serve only calls under the limit they were decided under; a call under another gives the
  // lease back and asks Redis, so a lowered limit is never exceeded by units leased under the old one.
  Decision decide(std::string_view key, std::int64_t cost, const Limit& limit) {
    validate(key, cost, limit);
    const std::chrono::microseconds duration = durationFor(limit);
    if (duration < kShortestLease) return log_.decide(key, cost, limit);
    return states_.withWaiting(key, [&](detail::LruMap<std::shared_ptr<detail::KeyLease>>& states,
                                        std::unique_lock<std::mutex>& lock, std::condition_variable& changed) {
      std::shared_ptr<detail::KeyLease>& slot = states.obtain(key, [](std::string_view, auto&) {});
      if (!slot) slot = std::make_shared<detail::KeyLease>();
      detail::KeyLease* state = slot.get();
      std::shared_ptr<detail::KeyLease> held;  // once this thread has waited: the map may forget the key meanwhile
      state->asked += cost;
      for (;;) {
        const LocalTime now = localNow();
        if (state->receipt.limit == limit && state->left >= cost && now < state->usable_until) {
          return leased(*state, cost, now);
        }
        if (state->refusal.stillRefuses(limit, cost, now)) return state->refusal.repeated(now);
        if (!state->calling) return askRedis(held ? held : slot, key, cost, limit, duration, now, lock, changed);
        // Another thread is asking Redis for this key's next lease: its answer is likely ours too.
        if (!held) held = slot;
        const std::uint64_t awaited = state->calls;
        changed.wait(lock, [&] { return state->calls != awaited; });
        if (state->failure) std::rethrow_exception(state->failure);
      }
    });
  }

  std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests) {
    return detail::eachDecided(*this, requests);
  }

 protected:
  // What the limiter's face (LimiterFace) applies around each decision.
  Reporting reporting() const { return reportingOf(log_.options()); }

 private:
  static constexpr std::chrono::microseconds kShortestLease = std::chrono::milliseconds(1);

  static LimiterOptions checked(LimiterOptions options) {
    if (options.rejected == RejectedRequests::counted) {
      throw InvalidArgument(std::string(kName) +
                            ": rejected requests cannot be counted: its refusals are decided in memory and never "
                            "reach Redis (use a SlidingWindowLimiter)");
    }
    return options;
  }

  static LeaseOptions checked(LeaseOptions leases, const Limit& limit) {
    if (leases.duration.count() < 0 || leases.duration > limit.window) {
      throw InvalidArgument(std::string(kName) + ": a lease of " + std::to_string(leases.duration.count()) +
                            " us is not in 0..the window of " + std::to_string(limit.window.count()) + " us");
    }
    if (leases.room_divisor < 2) {
      throw InvalidArgument(std::string(kName) + ": room_divisor " + std::to_string(leases.room_divisor) +
                            " is below 2: one lease could take all the room, starving other instances");
    }
    return leases;
  }

  static std::chrono::microseconds durationOf(const LeaseOptions& leases, const Limit& limit) {
    if (leases.duration.count() > 0) return std::min(leases.duration, limit.window);
    return std::min<std::chrono::microseconds>(limit.window / 50, std::chrono::seconds(1));
  }

  std::chrono::microseconds durationFor(const Limit& limit) const {
    return limit == this->limit() ? duration_ : durationOf(leases_, detail::checkedLimit(limit));
  }

  // Taken off every lease's end: clocks on two hosts may run at rates that differ by up to 1%.
  static std::chrono::microseconds marginOf(std::chrono::microseconds duration) {
    return duration / 100 + std::chrono::microseconds(1);
  }

  // The clock leases are timed on: monotonic, or the limiter's own clock when it has one (the scripts
  // then take their now from it too), so that a lease's end here is never later than in Redis.
  LocalTime localNow() const {
    if (!log_.options().clock.isRedisTime()) return log_.options().clock.now().count();
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  static Decision leased(detail::KeyLease& state, std::int64_t cost, LocalTime now) {
    state.left -= cost;
    Decision decision;
    decision.allowed = true;
    decision.limit = state.receipt.limit.max_requests;
    decision.remaining = state.left;
    // The lease's entry counts until its end plus the window; entries of others may count longer.
    decision.reset_after = std::chrono::microseconds(state.usable_until - now) + state.receipt.limit.window;
    decision.tier = Tier::lease;
    return decision;
  }

  // Takes the lease out of `state`, unusable from now on: its entry and the units it used.
  static std::pair<Receipt, std::int64_t> takeLease(detail::KeyLease& state) {
    const std::int64_t used = state.receipt.units - state.left;
    std::pair<Receipt, std::int64_t> taken{std::exchange(state.receipt, Receipt()), used};
    state.left = 0;
    state.usable_until = 0;
    return taken;
  }

  // What to ask Redis for: the request, and a lease when the key's demand says one pays. Updates the
  // demand seen since the last call.
  LeaseTerms termsFor(detail::KeyLease& state, std::int64_t cost, const Limit& limit,
                      std::chrono::microseconds duration, LocalTime now) const {
    if (state.last_call >= 0 && now > state.last_call) {
      const double rate = static_cast<double>(state.asked) / static_cast<double>(now - state.last_call);
      state.rate = state.rate == 0 ? rate : (state.rate + rate) / 2;
    }
    state.asked = 0;
    state.last_call = now;
    LeaseTerms terms;
    terms.units = cost;
    terms.duration = duration;
    terms.room_divisor = leases_.room_divisor;
    const double expected = state.rate * static_cast<double>(duration.count());  // units one lease would serve
    if (expected >= 1) {
      terms.units += static_cast<std::int64_t>(std::min(expected, static_cast<double>(limit.max_requests)));
      terms.units = std::min(terms.units, limit.max_requests);
    }
    if (state.holdsLease()) std::tie(terms.previous, terms.previous_used) = takeLease(state);
    return terms;
  }

  // Asks Redis for `cost` units of `key`, and for a lease when one pays, with the key's state locked by
  // `lock`; unlocked during the call, and left so after a plain admission. Those who wait on the key wake
  // when a lease call comes back.
  Decision askRedis(std::shared_ptr<detail::KeyLease> held, std::string_view key, std::int64_t cost, const Limit& limit,
                    std::chrono::microseconds duration, LocalTime now, std::unique_lock<std::mutex>& lock,
                    std::condition_variable& changed) {
    detail::KeyLease& state = *held;
    const LeaseTerms terms = termsFor(state, cost, limit, duration, now);
    const bool leasing = terms.units > cost || terms.previous;
    if (leasing) state.calling = true;
    lock.unlock();
    // The lease's use must stop `duration` after a moment before Redis read its clock: this one.
    const LocalTime sent = localNow();
    LeaseGrant lease;
    std::exception_ptr failure;
    try {
      if (leasing) {
        lease = log_.lease(key, cost, limit, terms);
      } else {
        lease.decision = log_.decide(key, cost, limit);
      }
    } catch (const Error&) {
      failure = std::current_exception();
    }
    // A plain admission leaves nothing to note: skip the lock (the path of every cold key).
    if (!leasing && !failure && lease.decision.allowed) return lease.decision;
    lock.lock();
    if (leasing) {
      state.calling = false;
      ++state.calls;
      state.failure = failure;
      changed.notify_all();
    }
    if (failure) std::rethrow_exception(failure);
    const Decision& decision = lease.decision;
    if (!decision.allowed) {
      state.refusal = detail::Refusal::of(limit, cost, decision, sent);
    } else if (lease.receipt.units > cost) {
      state.receipt = lease.receipt;
      state.left = lease.receipt.units - cost;
      state.usable_until = sent + (duration - marginOf(duration)).count();
    }
    return decision;
  }

  Log log_;
  LeaseOptions leases_;
  std::chrono::microseconds duration_;
  detail::ShardedLruMap<std::shared_ptr<detail::KeyLease>> states_;
};

}  // namespace swl::detail
