#pragma once
// RedisLimiter: the engine behind every Redis limiter. It turns a request into one EVALSHA of its
// algorithm's script and the script's answer into a Decision; the algorithm (swl/algorithms/) brings
// only its Lua. Users name it through an algorithm's alias:
//
//   auto connection = swl::Connection::tcp("127.0.0.1", 6379);
//   swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
//   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
//
// It keeps the limiter contract (limiter.hpp): tryAcquire is one EVALSHA, atomic on the server, so any
// number of processes and threads sharing a Redis agree exactly; tryAcquireMany is one pipelined round
// trip (per server). Thread safety: as safe as its RedisClient.
//

#include <swl/algorithm.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/limiter_calls.hpp>
#include <swl/options.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/client.hpp>
#include <swl/script_reply.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

// What RedisLimiter::lease asks for beyond the request in hand (LeasingLimiter fills it in).
struct LeaseTerms {
  std::int64_t units = 0;                 // units wanted in all, the request's cost among them (cost..limit)
  std::chrono::microseconds duration{0};  // how long the holder may use them (0..window)
  std::int64_t room_divisor = 4;          // take at most 1/room_divisor of what the window has room for
  Receipt previous;                       // the holder's previous lease on this key, given back first
  std::int64_t previous_used = 0;         // how many of its units were used
};

// RedisLimiter::lease's answer: the decision for the request in hand, and the entry it recorded.
struct Lease {
  Decision decision;
  Receipt receipt;
};

namespace detail {

template <class Algorithm, class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class RedisLimiterCore {
  static_assert(isAlgorithm<Algorithm>,
                "swl::RedisLimiter<Algorithm, ...>: Algorithm must provide kName, kScriptName, kScript, "
                "kRecordsMembers and static void check(const Limit&) (see swl/redis_limiter.hpp)");
  static_assert(isKeyPolicy<KeyPolicy>,
                "swl::RedisLimiter: KeyPolicy must be copyable with std::string key(std::string_view) const "
                "(see swl/policies/keys.hpp; to spread one key over several, use swl::ShardedLimiter)");
  static_assert(isMemberPolicy<MemberPolicy>,
                "swl::RedisLimiter: MemberPolicy must have std::string next() (see swl/policies/members.hpp)");
  static_assert(isTtlPolicy<TtlPolicy>,
                "swl::RedisLimiter: TtlPolicy must be copyable with std::chrono::milliseconds "
                "ttl(std::chrono::microseconds) const (see swl/policies/ttl.hpp)");

 public:
  static constexpr std::int64_t kLargestExact = detail::kLargestExact;

  RedisLimiterCore(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy(),
                   MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : redis_(&redis), calls_(limit, std::move(options), std::move(keys), std::move(members), std::move(ttl)) {}

  // One EVALSHA, under the limiter's own limit or one chosen for this call (a tenant's plan): the key's
  // state is the same whatever limit a call brings; the README's "Limits per tenant" says what each
  // algorithm makes of a limit that changes.
  Decision decide(std::string_view key, std::int64_t cost, const Limit& limit) {
    const auto request = calls_.prepare(key, cost, limit);
    return request.decide(*redis_->run(request.call()));
  }

  // tryAcquire for a cost known only afterwards (an LLM call's tokens): `estimate` units are decided
  // and, when admitted, recorded as one entry whose receipt settle() takes once the real cost is known.
  // A reservation never settled simply ages out with the window.
  Reservation reserve(std::string_view key, std::int64_t estimate) { return reserve(key, estimate, limit()); }
  Reservation reserve(std::string_view key, std::int64_t estimate, const Limit& limit) {
    static_assert(detail::canSettle<Algorithm>,
                  "swl::RedisLimiter::reserve: only an algorithm that records one entry per request can settle "
                  "one (the sliding window log: swl::SlidingWindowLimiter)");
    const detail::ReportedCall call(reporting(), key, estimate, limit);
    Reservation reservation;
    try {
      const auto request = calls_.prepare(key, estimate, limit);
      const Decision decision = request.decide(*redis_->run(request.call()));
      if (decision.allowed) reservation.receipt = request.receipt();
      reservation.decision = call.report(decision);
    } catch (const Error&) {
      reservation.decision = call.reportFailure(std::current_exception());
    }
    return reservation;
  }

  // The reservation now holds `actual` units: the difference is refunded (actual below the estimate; 0
  // takes it all back) or charged (above it: recorded even past the limit, since the units were spent),
  // exactly, at the reservation's own time. Settling twice changes nothing the second time, and a
  // reservation that has left the window (or whose receipt is empty) is left alone. Returns whether
  // this call settled it. Errors are thrown, whatever the failure policy (there is no decision to make).
  bool settle(const Receipt& receipt, std::int64_t actual) {
    static_assert(detail::canSettle<Algorithm>,
                  "swl::RedisLimiter::settle: only an algorithm that records one entry per request can settle "
                  "one (the sliding window log: swl::SlidingWindowLimiter)");
    return runSettleScript(receipt, actual, "settle");
  }

  // The primitive LeasingLimiter is built on (use that): `cost` units for `key` decided now and, when
  // they fit, up to `terms.units` recorded in all as one entry scored at now + terms.duration, after
  // `terms.previous` is given back. Units beyond `cost` may be used in memory until terms.duration after
  // a moment on a monotonic clock read before this call was sent, and never later: the guarantee rests
  // on it. Lease::receipt.units is what was recorded (0 when refused; `cost` alone when no more fit or
  // were asked for, and then nothing is leased).
  Lease lease(std::string_view key, std::int64_t cost, const LeaseTerms& terms) {
    return lease(key, cost, limit(), terms);
  }
  Lease lease(std::string_view key, std::int64_t cost, const Limit& limit, const LeaseTerms& terms) {
    static_assert(detail::canLease<Algorithm>,
                  "swl::RedisLimiter::lease: only the sliding window log leases units (swl::SlidingWindowLimiter)");
    const auto request = calls_.prepare(key, cost, limit);
    checkTerms(terms, cost, limit, key);
    const typename Calls::LeaseTexts texts{
        detail::IntegerText(terms.units), detail::IntegerText(terms.duration.count()),
        detail::IntegerText(terms.room_divisor), detail::IntegerText(terms.previous.units),
        detail::IntegerText(terms.previous_used)};
    const Reply reply = redis_->run(calls_.leaseCall(request, texts, terms.previous));
    std::int64_t values[5];
    detail::readIntegers(*reply, values, 5);
    Lease lease;
    lease.decision = detail::checkedDecision(values[0], values[1], values[2], values[3], limit.max_requests);
    const std::int64_t units = values[4];
    if (lease.decision.allowed ? units < cost || units > std::max(cost, terms.units) : units != 0) {
      throw detail::badReply(std::to_string(units) + " units leased for a request of " + std::to_string(cost) +
                             " asking " + std::to_string(terms.units));
    }
    if (lease.decision.allowed) {
      lease.receipt = request.receipt();
      lease.receipt.units = units;
    }
    return lease;
  }

  // Gives a lease back (LeasingLimiter): of its units only `used` still count, until its end + window.
  // Returns whether there was anything to give back.
  bool giveBack(const Receipt& lease, std::int64_t used) { return runSettleScript(lease, used, "giveBack"); }

  Usage peek(std::string_view key, const Limit& limit) {
    const auto request = calls_.preparePeek(key, limit);
    return Calls::usage(*redis_->run(request.call()), request);
  }

  bool reset(std::string_view key) {
    if (key.empty()) throw InvalidArgument(std::string(Algorithm::kName) + "::reset: the key is empty");
    return redis_->run(detail::forgetScript(), {redisKey(key)}, {})->integer() > 0;
  }

  const Limit& limit() const noexcept { return calls_.limit(); }
  const LimiterOptions& options() const noexcept { return calls_.options(); }
  void validate(std::string_view key, std::int64_t cost, const Limit& limit) const {
    calls_.validate(key, cost, limit);
  }

  std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests) {
    std::vector<Outcome> outcomes(requests.size());
    std::vector<typename Calls::Request> prepared;
    std::vector<std::size_t> sent;  // prepared[i] answers requests[sent[i]]
    prepared.reserve(requests.size()), sent.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      try {
        prepared.push_back(calls_.prepare(requests[i].key, requests[i].cost, requests[i].limitOr(limit())));
        sent.push_back(i);
      } catch (const InvalidArgument&) {
        outcomes[i] = {detail::blindRefusal(requests[i].limitOr(limit())), std::current_exception()};
      }
    }
    std::vector<ScriptCall> calls;
    calls.reserve(prepared.size());
    for (const auto& request : prepared) calls.push_back(request.call());
    std::vector<ScriptReply> replies = redis_->runMany(calls);
    for (std::size_t i = 0; i < replies.size(); ++i) {
      Outcome& outcome = outcomes[sent[i]];
      if (!replies[i].error) {
        try {
          outcome.decision = prepared[i].decide(*replies[i].reply);
          continue;
        } catch (const Error&) {
          replies[i].error = std::current_exception();
        }
      }
      outcome = {detail::blindRefusal(prepared[i].limit()), std::move(replies[i].error)};
    }
    return outcomes;
  }

  // The Redis key that holds `key`'s state, for operators and tests.
  std::string redisKey(std::string_view key) const { return calls_.redisKey(key); }

  static const Script& script() { return detail::scriptOf<Algorithm>(); }

 protected:
  // What the limiter's face (LimiterFace) applies around each decision.
  Reporting reporting() const { return {options().observer, options().on_failure, Tier::redis, options().enforcement}; }

 private:
  using Calls = detail::LimiterCalls<Algorithm, KeyPolicy, MemberPolicy, TtlPolicy>;

  bool runSettleScript(const Receipt& receipt, std::int64_t actual, std::string_view call) {
    if (!receipt) return false;
    if (actual < 0 || actual >= detail::kLargestExact) {
      throw InvalidArgument(std::string(Algorithm::kName) + "::" + std::string(call) + ": " + std::to_string(actual) +
                            " units are not in 0..2^53-1 (key " + detail::quoted(receipt.redis_key) + ")");
    }
    const typename Calls::SettleTexts texts = calls_.settleTexts(receipt, actual);
    return redis_->run(calls_.settleCall(receipt, texts))->integer() == 1;
  }

  void checkTerms(const LeaseTerms& terms, std::int64_t cost, const Limit& limit, std::string_view key) const {
    const auto refuse = [&](const std::string& why) {
      return InvalidArgument(std::string(Algorithm::kName) + "::lease: " + why + " (key " + detail::quoted(key) + ")");
    };
    if (terms.units < cost || terms.units > limit.max_requests) {
      throw refuse(std::to_string(terms.units) + " units wanted, not in cost " + std::to_string(cost) + "..limit " +
                   std::to_string(limit.max_requests));
    }
    if (terms.duration.count() < 0 || terms.duration > limit.window) {
      throw refuse("a lease of " + std::to_string(terms.duration.count()) + " us is not in 0..the window");
    }
    if (terms.room_divisor < 1) throw refuse("room_divisor " + std::to_string(terms.room_divisor) + " is below 1");
    if (terms.previous && (terms.previous_used < 0 || terms.previous_used > terms.previous.units)) {
      throw refuse("the previous lease used " + std::to_string(terms.previous_used) + " of its " +
                   std::to_string(terms.previous.units) + " units");
    }
  }

  RedisClient* redis_;
  Calls calls_;
};

}  // namespace detail

// The limiter itself: the contract's face over the core above.
template <class Algorithm, class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using RedisLimiter = LimiterFace<detail::RedisLimiterCore<Algorithm, KeyPolicy, MemberPolicy, TtlPolicy>>;

}  // namespace swl
