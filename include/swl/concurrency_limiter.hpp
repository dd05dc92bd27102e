#pragma once
/// \file
/// ConcurrencyLimiter: at most N requests in flight per key, across every process sharing a Redis (an LLM
/// provider's 10 concurrent generations per API key; a slow endpoint). Where a rate limit counts requests
/// per window, this counts slots held now: a request takes a slot when it starts and gives it back when
/// it ends.
///
///   swl::ConcurrencyLimiter<> limiter(pool, swl::Concurrency{10, std::chrono::seconds(30)});
///   if (auto slot = limiter.tryAcquire("key:42")) {
///     generate();   // the slot is released when `slot` goes out of scope
///   } else {
///     reply429(slot.decision().retry_after);
///   }
///
/// Each key is one sorted set in Redis: member = a slot's unique id (MemberPolicy), score = when the slot
/// expires unless extended or released first (microseconds). A holder that crashes never releases its
/// slot: it frees itself slot_ttl after it was taken (or last extended). Acquiring, releasing and
/// extending are one EVALSHA each, atomic on the server, so any number of processes and threads agree
/// exactly; they run after the prelude (detail/script/assembly.hpp), so the clock (LimiterOptions::clock) works
/// as for every limiter. ARGV[1] (the window) is slot_ttl, ARGV[2] (the limit) max_in_flight.
///
/// tryAcquire keeps the limiter contract's promises for one decision (limiter.hpp): invalid input throws
/// InvalidArgument, the failure policy answers when Redis cannot, and the observer sees every acquire
/// exactly once (cost 1). A Slot the failure policy admitted (Tier::fail_open) holds nothing in Redis.
/// release and extend are not decisions: they are not reported, and their errors are thrown.
/// Thread safety: the limiter is as safe as its RedisClient (a pool or a cluster: yes); one Slot is used
/// by one thread at a time, like any value.

#include <swl/algorithm.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/limiter/concurrency_slots.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/detail/script/assembly.hpp>
#include <swl/detail/script/now.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/options.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/redis/client.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace swl {

/// What a ConcurrencyLimiter allows per key: how many in flight, and for how long a slot lasts.
struct Concurrency {
  std::int64_t max_in_flight = 0;         ///< slots per key (1..2^53-1)
  std::chrono::microseconds slot_ttl{0};  ///< how long a slot lives unless extended: a crashed holder's
                                          ///< slot frees itself after this (1 us..2^53-1 us)
};

/// Equal when both fields are: a call's concurrency is then the limiter's own.
inline bool operator==(const Concurrency& a, const Concurrency& b) noexcept {
  return a.max_in_flight == b.max_in_flight && a.slot_ttl == b.slot_ttl;
}
/// The negation of operator==.
inline bool operator!=(const Concurrency& a, const Concurrency& b) noexcept { return !(a == b); }

/// At most N requests in flight per key, across every process sharing a Redis (concurrency_limiter.hpp
/// says how slots are kept).
template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember>
class ConcurrencyLimiter {
  static_assert(isKeyPolicy<KeyPolicy>,
                "swl::ConcurrencyLimiter: KeyPolicy must be copyable with std::string key(std::string_view) const "
                "(see swl/policies/keys.hpp)");
  static_assert(isMemberPolicy<MemberPolicy>,
                "swl::ConcurrencyLimiter: MemberPolicy must have std::string next() (see swl/policies/members.hpp)");

 public:
  /// The limiter's name, for messages.
  static constexpr std::string_view kName = "swl::ConcurrencyLimiter";
  /// A refusal asks the caller back when the earliest slot expires, or after this, whichever comes first:
  /// slots are usually released long before they expire, and only a new try finds out.
  static constexpr std::chrono::microseconds kLongestRetryAfter = std::chrono::milliseconds(100);

  /// One admission's slot, released when the Slot is destroyed (or by release()). Move-only; it must not
  /// outlive its limiter. A refused Slot, and one the failure policy admitted, hold nothing in Redis.
  class Slot {
   public:
    /// A Slot that holds nothing, to move an acquired one into.
    Slot() = default;
    /// Takes over `other`'s slot; `other` then holds nothing.
    Slot(Slot&& other) noexcept
        : limiter_(other.limiter_),
          decision_(other.decision_),
          redis_key_(std::move(other.redis_key_)),
          member_(std::exchange(other.member_, std::string())),
          slot_ttl_(other.slot_ttl_) {}
    /// Releases the slot this one holds, then takes over `other`'s.
    Slot& operator=(Slot&& other) noexcept {
      if (this != &other) {
        releaseQuietly();
        limiter_ = other.limiter_;
        decision_ = other.decision_;
        redis_key_ = std::move(other.redis_key_);
        member_ = std::exchange(other.member_, std::string());
        slot_ttl_ = other.slot_ttl_;
      }
      return *this;
    }
    /// Move-only: one slot, one holder.
    ///@{
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ///@}
    /// Releases the slot it holds; an error is swallowed, as an unreleased slot frees itself at its expiry.
    ~Slot() { releaseQuietly(); }

    /// Admitted: by Redis, or by the failure policy (decision().tier says which).
    explicit operator bool() const noexcept { return decision_.allowed; }
    /// The decision that admitted or refused this Slot.
    const Decision& decision() const noexcept { return decision_; }
    /// Whether this Slot still holds a slot in Redis, as far as it knows (it may have expired since).
    bool held() const noexcept { return !member_.empty(); }

    /// Keeps the slot for `duration` from now (1 us..slot_ttl; no argument: slot_ttl), for work that runs
    /// longer than slot_ttl: extend before it expires. False when the slot had expired already (another
    /// holder may have it now: stop the work) or this Slot holds nothing. Errors are thrown, and the slot
    /// is still held then.
    bool extend() { return extend(slot_ttl_); }
    /// The same for `duration` from now (1 us..slot_ttl), as extend() says.
    bool extend(std::chrono::microseconds duration) {
      if (!held()) return false;
      if (limiter_->extendSlot(redis_key_, member_, duration, slot_ttl_)) return true;
      member_.clear();
      return false;
    }

    /// Frees the slot now. Returns whether it was still held (false: it expired, was released already,
    /// or this Slot holds nothing). Afterwards the Slot holds nothing, even when an error is thrown: the
    /// release may have run, and an unreleased slot frees itself at its expiry.
    bool release() {
      if (!held()) return false;
      const std::string member = std::exchange(member_, std::string());
      return limiter_->releaseSlot(redis_key_, member);
    }

   private:
    friend class ConcurrencyLimiter;
    Slot(ConcurrencyLimiter& limiter, const Decision& decision, std::string redis_key, std::string member,
         std::chrono::microseconds slot_ttl)
        : limiter_(&limiter),
          decision_(decision),
          redis_key_(std::move(redis_key)),
          member_(std::move(member)),
          slot_ttl_(slot_ttl) {}

    // A destructor must not throw: it may run while another exception unwinds the stack, and a second
    // one would end the program. A slot whose release failed frees itself at its expiry.
    void releaseQuietly() noexcept {
      try {
        release();
      } catch (...) {
      }
    }

    ConcurrencyLimiter* limiter_ = nullptr;
    Decision decision_;
    std::string redis_key_;
    std::string member_;
    std::chrono::microseconds slot_ttl_{1};  // the longest extension: the slot_ttl it was taken under
  };

  /// A limiter of `concurrency` per key over `redis`, which must outlive it and its Slots.
  ConcurrencyLimiter(RedisClient& redis, Concurrency concurrency, LimiterOptions options = {},
                     KeyPolicy keys = KeyPolicy(), MemberPolicy members = MemberPolicy())
      : redis_(&redis),
        concurrency_(checked(concurrency)),
        limit_{concurrency_.max_in_flight, concurrency_.slot_ttl},
        options_(std::move(options)),
        keys_(std::move(keys)),
        members_(std::move(members)),
        longest_retry_after_text_(kLongestRetryAfter.count()) {
    if (options_.access) {
      throw InvalidArgument(
          "swl::ConcurrencyLimiter: LimiterOptions::access is not taken here: a slot is held and released, so a "
          "listed key has none to give; ask the list (AccessList::listingOf) before tryAcquire");
    }
    detail::refuseBlockFor(options_, "swl::ConcurrencyLimiter",
                           "a full key frees itself as slots are released, so there is no refusal to prolong");
  }

  /// Neither copied nor moved: its Slots point at it.
  ///@{
  ConcurrencyLimiter(const ConcurrencyLimiter&) = delete;  // Slots point at it
  ConcurrencyLimiter& operator=(const ConcurrencyLimiter&) = delete;
  ///@}

  /// A slot for `key` if fewer than max_in_flight are held now; never waits.
  Slot tryAcquire(std::string_view key) { return tryAcquire(key, concurrency_); }

  /// The same under a concurrency chosen for this call (a tenant's plan: 10 in flight for one, 2 for
  /// another): the key's slots are judged by it from this call on. Lowered below what is held, it admits
  /// nothing until enough slots are released or expire; the held ones keep their own expiry.
  Slot tryAcquire(std::string_view key, const Concurrency& concurrency) {
    std::string redis_key;
    std::string member;
    const detail::ReportedCall call(reporting(), key, 1, Limit{concurrency.max_in_flight, concurrency.slot_ttl});
    Decision decision;
    try {
      if (concurrency != concurrency_) checked(concurrency);
      detail::checkRequest(kName, "tryAcquire", key, 1, concurrency.max_in_flight);
      std::string asked_key = keys_.key(key);
      std::string asked_member = nextMember();
      const Decision answer = detail::decodeDecision(
          *run(detail::slotScripts().acquire, asked_key, "1", asked_member, longest_retry_after_text_, concurrency),
          concurrency.max_in_flight);
      if (answer.allowed) redis_key = std::move(asked_key), member = std::move(asked_member);
      decision = call.report(answer);
    } catch (const Error&) {
      decision = call.reportFailure(std::current_exception());
    }
    return Slot(*this, decision, std::move(redis_key), std::move(member), concurrency.slot_ttl);
  }

  /// Waits for a slot: tries, and while refused sleeps retry_after and tries again. Returns the admitted
  /// Slot, or the last refusal as soon as its retry_after would end after the deadline.
  Slot acquire(std::string_view key, Deadline deadline) { return acquire(key, concurrency_, deadline); }
  /// The same under a concurrency chosen for this call, as tryAcquire(key, concurrency).
  Slot acquire(std::string_view key, const Concurrency& concurrency, Deadline deadline) {
    return detail::retriedUntil(deadline.at(), [&] { return tryAcquire(key, concurrency); });
  }

  /// How many slots of `key` are held now (expired ones are dropped, nothing is taken). Errors are thrown.
  std::int64_t inFlight(std::string_view key) {
    checkKey(key, "inFlight");
    const std::string redis_key = keys_.key(key);
    return detail::decodeUsage(
               *run(detail::slotScripts().acquire, redis_key, "0", {}, longest_retry_after_text_, concurrency_),
               concurrency_.max_in_flight)
        .used;
  }

  /// Forgets every slot of `key`: whether there was any. Their holders' release() and extend() then
  /// answer false. Errors are thrown.
  bool reset(std::string_view key) {
    checkKey(key, "reset");
    return redis_->run(detail::forgetScript(), {keys_.key(key)}, {})->integer() > 0;
  }

  /// The limiter's own concurrency.
  const Concurrency& concurrency() const noexcept { return concurrency_; }
  /// The options it was made with.
  const LimiterOptions& options() const noexcept { return options_; }
  /// The Redis key that holds `key`'s slots, for operators and tests.
  std::string redisKey(std::string_view key) const { return keys_.key(key); }

 private:
  static Concurrency checked(Concurrency concurrency) {
    if (concurrency.max_in_flight <= 0 || concurrency.max_in_flight >= detail::kLargestExact) {
      throw InvalidArgument(std::string(kName) + ": max_in_flight " + std::to_string(concurrency.max_in_flight) +
                            " is not in 1..2^53-1");
    }
    if (concurrency.slot_ttl.count() <= 0 || concurrency.slot_ttl.count() >= detail::kLargestExact) {
      throw InvalidArgument(std::string(kName) + ": a slot_ttl of " + std::to_string(concurrency.slot_ttl.count()) +
                            " us is not positive (or not below 2^53 us): a slot must expire, or a crashed holder "
                            "would keep it forever");
    }
    return concurrency;
  }

  void checkKey(std::string_view key, std::string_view call) const {
    if (key.empty()) throw InvalidArgument(std::string(kName) + "::" + std::string(call) + ": the key is empty");
  }

  // An empty member would stand for every holder at once: the slots would be one.
  std::string nextMember() {
    std::string member = members_.next();
    if (member.empty()) throw InvalidArgument(std::string(kName) + ": the member policy made an empty slot id");
    return member;
  }

  detail::Reporting reporting() const {
    return {options_.observer, options_.on_failure, Tier::redis, options_.enforcement};
  }

  // One call of `script` with the prelude's arguments (ARGV[6], a fixed TTL, is left empty: the key's
  // expiry follows its latest slot) and `extra` as ARGV[8]. Every text it views lives in this frame.
  Reply run(const Script& script, const std::string& redis_key, std::string_view cost, std::string_view member,
            std::string_view extra, const Concurrency& concurrency) {
    const detail::ScriptNow now(options_.clock, concurrency.slot_ttl);
    const detail::IntegerText slot_ttl(concurrency.slot_ttl.count()), max_in_flight(concurrency.max_in_flight);
    return redis_->run(detail::preludeCall(script, redis_key,
                                           {slot_ttl, max_in_flight, cost, now.argument(), member, {}, "0"}, {extra}));
  }

  bool releaseSlot(const std::string& redis_key, const std::string& member) {
    return run(detail::slotScripts().release, redis_key, "0", member, {}, concurrency_)->integer() == 1;
  }

  bool extendSlot(const std::string& redis_key, const std::string& member, std::chrono::microseconds duration,
                  std::chrono::microseconds slot_ttl) {
    if (duration.count() <= 0 || duration > slot_ttl) {
      throw InvalidArgument(std::string(kName) + "::extend: " + std::to_string(duration.count()) +
                            " us is not in 1 us..slot_ttl (" + std::to_string(slot_ttl.count()) + " us) (key " +
                            detail::quoted(redis_key) + ")");
    }
    const detail::IntegerText duration_text(duration.count());
    return run(detail::slotScripts().extend, redis_key, "0", member, duration_text, concurrency_)->integer() == 1;
  }

  RedisClient* redis_;
  Concurrency concurrency_;
  Limit limit_;  // what the failure policy answers with: max_in_flight per slot_ttl
  LimiterOptions options_;
  KeyPolicy keys_;
  MemberPolicy members_;
  detail::IntegerText longest_retry_after_text_;
};

}  // namespace swl
