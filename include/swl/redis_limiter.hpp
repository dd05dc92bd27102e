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
// An Algorithm is a type with
//     static constexpr std::string_view kName;        // "swl::FixedWindowLimiter", for messages
//     static constexpr std::string_view kScriptName;  // "fixed_window", for messages
//     static constexpr std::string_view kScript;      // its Lua, run after kScriptPrelude below
//     static constexpr bool kRecordsMembers;          // whether it records a member per request (the log)
//     static void check(const Limit&);                // throws InvalidArgument for limits it cannot keep exactly
// and, optionally,
//     static constexpr std::string_view kLayout;      // Lua run first: the numbers all its scripts share
//     static constexpr std::string_view kFastPath;    // Lua run before kFunctions by kScript alone: its
//                                                     // busiest path, answered before anything is defined
//     static constexpr std::string_view kFunctions;   // Lua run before kScript, shared with other scripts
//     static constexpr std::string_view kArgument;    // its own parameter, sent as ARGV[8] (bucketed: buckets)
//     static constexpr std::string_view kSettleScriptName, kSettleScript;  // it can settle reservations
//     static constexpr std::string_view kLeaseScriptName, kLeaseScript;    // it can lease units
// (kSettleScript and kLeaseScript run after the prelude and kFunctions too).
// Every script takes the arguments the prelude reads, treats cost 0 as a peek that records nothing, and
// answers {allowed, remaining, retry_after_us, reset_after_us}.

#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/options.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/client.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace swl {

// The opening of every algorithm's script: the arguments, read the same way for all, and integer helpers.
inline constexpr std::string_view kScriptPrelude = R"lua(
-- swl: one atomic rate-limit decision for one key. This prelude reads the arguments every algorithm
-- takes; the algorithm's own part follows it (include/swl/algorithms/).
-- KEYS[1]  the key's state
-- ARGV[1]  window in microseconds
-- ARGV[2]  limit: the most units the window admits
-- ARGV[3]  cost: units this request asks for (1 <= cost <= limit, checked by the client); default 1;
--          0 peeks: the state is read (and trimmed) but nothing is recorded
-- ARGV[4]  now in microseconds since the epoch; '' or absent: read Redis's own clock
-- ARGV[5]  this request's unique member, for algorithms that record one; '' or absent: its millisecond
--          timestamp (the seed articles' scheme)
-- ARGV[6]  expiry in milliseconds for algorithms that take one, set on every write; absent: the window
-- ARGV[7]  '1' to record rejected requests too (an opt-in penalty); otherwise a refusal changes nothing
-- Returns {allowed 1|0, remaining, retry_after_us, reset_after_us}, integers only: Redis truncates a
-- Lua number on its way to the client, so durations travel as whole microseconds. `remaining` is
-- limit minus what the window holds, below 0 when counted refusals filled it past the limit.
-- The first three arguments alone make a call, so other tools (redis-benchmark, ../shared/bench) can
-- run the same script.
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local cost = tonumber(ARGV[3] or 1)

-- Times sent back to Redis are built from integer parts: Lua formats a concatenated number with 14
-- significant digits and would cut the last digits off a 16-digit microsecond time.
local now_text = ARGV[4]
local redis_time = now_text == nil or now_text == ''
if redis_time then
  local time = redis.call('TIME')
  now_text = time[1] .. string.format('%06d', tonumber(time[2]))
end
local now = tonumber(now_text)  -- below 2^53, so exact in a Lua double
local record = cost > 0
local count_rejected = ARGV[7] == '1'

-- Every value below stays an integer under 2^53, exact in a Lua double; two helpers keep it so.
-- a // b: the quotient of two doubles can round up to the next integer, so it is checked.
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
-- An integer as Redis should store it: Lua would print only 14 significant digits.
local function text(n) return string.format('%.0f', n) end
)lua";

template <class T, class = void>
struct IsAlgorithm : std::false_type {};
template <class T>
struct IsAlgorithm<T, std::void_t<decltype(T::kName), decltype(T::kScriptName), decltype(T::kScript),
                                  decltype(T::kRecordsMembers), decltype(T::check(std::declval<const Limit&>()))>>
    : std::bool_constant<std::is_convertible_v<decltype(T::kName), std::string_view> &&
                         std::is_convertible_v<decltype(T::kScriptName), std::string_view> &&
                         std::is_convertible_v<decltype(T::kScript), std::string_view> &&
                         std::is_same_v<std::remove_cv_t<decltype(T::kRecordsMembers)>, bool>> {};

template <class T>
inline constexpr bool isAlgorithm = IsAlgorithm<T>::value;

namespace detail {

// Whether Member<T> names something: the optional parts of an algorithm, one alias each below.
template <template <class> class Member, class T, class = void>
struct Provides : std::false_type {};
template <template <class> class Member, class T>
struct Provides<Member, T, std::void_t<Member<T>>> : std::true_type {};

template <class T>
using LayoutPart = decltype(T::kLayout);
template <class T>
using FastPathPart = decltype(T::kFastPath);
template <class T>
using FunctionsPart = decltype(T::kFunctions);
template <class T>
using ArgumentPart = decltype(T::kArgument);
template <class T>
using SettlePart = std::void_t<decltype(T::kSettleScript), decltype(T::kSettleScriptName)>;
template <class T>
using LeasePart = std::void_t<decltype(T::kLeaseScript), decltype(T::kLeaseScriptName)>;

template <class T>
inline constexpr bool hasLayout = Provides<LayoutPart, T>::value;
template <class T>
inline constexpr bool hasFastPath = Provides<FastPathPart, T>::value;
template <class T>
inline constexpr bool hasFunctions = Provides<FunctionsPart, T>::value;
template <class T>
inline constexpr bool hasArgument = Provides<ArgumentPart, T>::value;
template <class T>
inline constexpr bool canSettle = Provides<SettlePart, T>::value;
template <class T>
inline constexpr bool canLease = Provides<LeasePart, T>::value;

// The prelude, the algorithm's layout, its fast path (for its decisions alone), its functions and then
// `part`: how every script of an algorithm is put together.
template <class Algorithm>
std::string scriptText(std::string_view part, bool with_fast_path = false) {
  std::string whole(kScriptPrelude);
  if constexpr (hasLayout<Algorithm>) whole.append(Algorithm::kLayout);
  if constexpr (hasFastPath<Algorithm>) {
    if (with_fast_path) whole.append(Algorithm::kFastPath);
  }
  if constexpr (hasFunctions<Algorithm>) whole.append(Algorithm::kFunctions);
  return whole.append(part);
}

// The one Script its limiters run. (A Script views its text, so each text is kept beside it.)
template <class Algorithm>
const Script& scriptOf() {
  static const std::string text = scriptText<Algorithm>(Algorithm::kScript, true);
  static const Script script(Algorithm::kScriptName, text);
  return script;
}

template <class Algorithm>
const Script& settleScriptOf() {
  static const std::string text = scriptText<Algorithm>(Algorithm::kSettleScript);
  static const Script script(Algorithm::kSettleScriptName, text);
  return script;
}

template <class Algorithm>
const Script& leaseScriptOf() {
  static const std::string text = scriptText<Algorithm>(Algorithm::kLeaseScript);
  static const Script script(Algorithm::kLeaseScriptName, text);
  return script;
}

// For algorithms whose scripts multiply counts by the window to stay in integers: that product must be exact.
inline void checkScaledExact(const Limit& limit, std::string_view limiter) {
  if (limit.max_requests > (kLargestExact - 1) / limit.window.count()) {
    throw InvalidArgument(std::string(limiter) + ": a limit of " + std::to_string(limit.max_requests) + " per " +
                          std::to_string(limit.window.count()) +
                          " us is too fine to count exactly (limit x window must stay below 2^53 microseconds); "
                          "use a shorter window or a SlidingWindowLimiter");
  }
}

// Client-clock time in microseconds for a script's ARGV[4], or 0 when the script reads Redis's clock.
// Scores hold times exactly only below 2^53 us, and a window must fit before now.
inline std::int64_t scriptNow(const Clock& clock, std::chrono::microseconds window) {
  if (clock.isRedisTime()) return 0;
  const std::int64_t now = clock.now().count();
  if (now < window.count() || now >= kLargestExact) {
    throw InvalidArgument("swl: the clock reads " + std::to_string(now) +
                          " us, outside the window .. 2^53 us that scores can hold exactly");
  }
  return now;
}

// What the scripts take as now: nothing when they read Redis's clock.
inline std::string_view nowArgument(const Clock& clock, const IntegerText& now) {
  return clock.isRedisTime() ? std::string_view() : now.view();
}

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
inline Decision checkedDecision(std::int64_t allowed, std::int64_t remaining, std::int64_t retry_after_us,
                                std::int64_t reset_after_us, std::int64_t limit) {
  if (allowed != 0 && allowed != 1) throw badReply("allowed = " + std::to_string(allowed));
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
  decision.tier = Tier::redis;
  return decision;
}

inline Decision decodeDecision(ReplyView reply, std::int64_t limit) {
  std::int64_t values[4];
  readIntegers(reply, values, 4);
  return checkedDecision(values[0], values[1], values[2], values[3], limit);
}

// A peek's reply as Usage: what the window holds, past the limit too (counted refusals).
inline Usage decodeUsage(ReplyView reply, std::int64_t limit) {
  std::int64_t values[4];
  readIntegers(reply, values, 4);
  const Decision seen = checkedDecision(values[0], values[1], values[2], values[3], limit);
  return {limit, limit - values[1], seen.remaining, seen.reset_after};
}

// A member policy's member as the log can record it. The log's own members begin with, or hold, bytes
// below ',' ('!', '#', '*', '+', ')') and '=' (which marked units in sets of 0.2): a member holding one
// could be read as one of them.
inline std::string checkedMember(std::string_view limiter, std::string member) {
  const auto marks = [](char byte) { return static_cast<unsigned char>(byte) < ',' || byte == '='; };
  if (std::any_of(member.begin(), member.end(), marks)) {
    throw InvalidArgument(std::string(limiter) + ": the member policy made the member " + quoted(member) +
                          ", which holds a byte below ',' (a space, a control byte or one of !\"#$%&'()*+) or '=': "
                          "the log marks its own members with those");
  }
  return member;
}

// What one limiter's calls send and what their answers mean, without I/O: shared by the blocking
// RedisLimiter and the async limiter.
template <class Algorithm, class KeyPolicy, class MemberPolicy, class TtlPolicy>
class LimiterCalls {
 public:
  // A limit as the scripts take it: checked once, and its numbers as text. The limiter's own is made
  // at construction; a limit given with a call is made for that call (a few integer formats).
  struct LimitArguments {
    Limit limit;
    IntegerText window, max_requests, ttl;
  };

  // One request's arguments, owned until its call has been sent. call() views into it, so it must stay
  // where it is while a call made from it is in use.
  class Request {
   public:
    ScriptCall call() const {
      const std::string_view now = calls_->nowArgument(now_);
      if constexpr (hasArgument<Algorithm>) {
        return ScriptCall(scriptOf<Algorithm>(), {redis_key_},
                          {limit_.window, limit_.max_requests, cost_text_, now, member_, limit_.ttl,
                           calls_->count_rejected_, Algorithm::kArgument});
      } else {
        return ScriptCall(
            scriptOf<Algorithm>(), {redis_key_},
            {limit_.window, limit_.max_requests, cost_text_, now, member_, limit_.ttl, calls_->count_rejected_});
      }
    }
    std::int64_t cost() const noexcept { return cost_; }
    const Limit& limit() const noexcept { return limit_.limit; }

    // The script's answer to this request.
    Decision decide(ReplyView reply) const { return decodeDecision(reply, limit().max_requests); }

    // Where this request's entry is, for settling it later.
    Receipt receipt() const { return {redis_key_, member_, cost_, limit()}; }

   private:
    friend class LimiterCalls;
    Request(const LimiterCalls& calls, const LimitArguments& limit, std::string redis_key, std::string member,
            std::int64_t cost)
        : calls_(&calls),
          limit_(limit),
          redis_key_(std::move(redis_key)),
          member_(std::move(member)),
          cost_(cost),
          cost_text_(cost),
          now_(calls.now(limit.limit)) {}

    const LimiterCalls* calls_;
    LimitArguments limit_;
    std::string redis_key_;
    std::string member_;
    std::int64_t cost_;
    IntegerText cost_text_;
    IntegerText now_;
  };

  LimiterCalls(Limit limit, LimiterOptions options, KeyPolicy keys, MemberPolicy members, TtlPolicy ttl)
      : options_(std::move(options)),
        keys_(std::move(keys)),
        members_(std::move(members)),
        ttl_(std::move(ttl)),
        count_rejected_(options_.rejected == RejectedRequests::counted ? "1" : "0"),
        own_(arguments(limit)) {}

  // Throws InvalidArgument for a request no limit could take; nothing has been sent then.
  Request prepare(std::string_view key, std::int64_t cost) { return prepare(key, cost, own_); }

  // The same under a limit chosen for this call (a tenant's plan): checked as the constructor checks one.
  Request prepare(std::string_view key, std::int64_t cost, const Limit& limit) {
    if (limit == own_.limit) return prepare(key, cost, own_);
    return prepare(key, cost, arguments(limit));
  }

  // settle()'s call for `receipt` now holding `actual` units, in the window it was recorded under. The
  // texts it views live in `texts`.
  struct SettleTexts {
    LimitArguments limit;
    IntegerText actual, now, recorded;
  };
  SettleTexts settleTexts(const Receipt& receipt, std::int64_t actual) const {
    LimitArguments limit = arguments(receipt.limit);
    const IntegerText now(this->now(limit.limit));
    return {std::move(limit), IntegerText(actual), now, IntegerText(receipt.units)};
  }
  ScriptCall settleCall(const Receipt& receipt, const SettleTexts& texts) const {
    return ScriptCall(settleScriptOf<Algorithm>(), {receipt.redis_key},
                      {texts.limit.window, texts.limit.max_requests, texts.actual, nowArgument(texts.now),
                       receipt.member, texts.limit.ttl, "0", texts.recorded});
  }

  // lease()'s call: `request` and the terms beyond it. The texts it views live in `texts`.
  struct LeaseTexts {
    IntegerText units, duration, room_divisor, previous_units, previous_used;
  };
  ScriptCall leaseCall(const Request& request, const LeaseTexts& texts, const Receipt& previous) const {
    const LimitArguments& limit = request.limit_;
    return ScriptCall(leaseScriptOf<Algorithm>(), {request.redis_key_},
                      {limit.window, limit.max_requests, request.cost_text_, nowArgument(request.now_), request.member_,
                       limit.ttl, "0", texts.units, texts.duration, texts.room_divisor, previous.member,
                       texts.previous_units, texts.previous_used});
  }

  // A cost-0 request: the scripts read such a request's window and record nothing.
  Request preparePeek(std::string_view key, const Limit& limit) const {
    if (key.empty()) throw InvalidArgument(std::string(Algorithm::kName) + "::peek: the key is empty");
    return Request(*this, limit == own_.limit ? own_ : arguments(limit), redisKey(key), std::string(), 0);
  }

  static Usage usage(ReplyView reply, const Request& peek) { return decodeUsage(reply, peek.limit().max_requests); }

  void validate(std::string_view key, std::int64_t cost, const Limit& limit) const {
    checkRequest(Algorithm::kName, "tryAcquire", key, cost, limit.max_requests);
  }

  std::string redisKey(std::string_view key) const { return keys_.key(key); }
  const Limit& limit() const noexcept { return own_.limit; }
  const LimiterOptions& options() const noexcept { return options_; }

  // Client-clock time in microseconds, or 0 when the script reads Redis's clock.
  std::int64_t now(const Limit& limit) const { return scriptNow(options_.clock, limit.window); }

 private:
  Request prepare(std::string_view key, std::int64_t cost, const LimitArguments& limit) {
    validate(key, cost, limit.limit);
    std::string member;
    if constexpr (Algorithm::kRecordsMembers) member = checkedMember(Algorithm::kName, members_.next());
    return Request(*this, limit, redisKey(key), std::move(member), cost);
  }

  LimitArguments arguments(const Limit& limit) const {
    Algorithm::check(checkedLimit(limit));
    const std::chrono::milliseconds ttl = checkedTtl(ttl_, limit.window, Algorithm::kName);
    return {limit, IntegerText(limit.window.count()), IntegerText(limit.max_requests), IntegerText(ttl.count())};
  }

  std::string_view nowArgument(const IntegerText& now) const { return detail::nowArgument(options_.clock, now); }

  LimiterOptions options_;
  KeyPolicy keys_;
  MemberPolicy members_;
  TtlPolicy ttl_;
  std::string_view count_rejected_;
  LimitArguments own_;
};

// Deletes a key; a script, so that every RedisClient (a cluster included) runs it like the others.
inline const Script& forgetScript() {
  static const Script forget("forget", "return redis.call('DEL', KEYS[1])");
  return forget;
}

}  // namespace detail

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

template <class Algorithm, class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class RedisLimiter : public LimiterFacade<RedisLimiter<Algorithm, KeyPolicy, MemberPolicy, TtlPolicy>> {
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

  RedisLimiter(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy(),
               MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : redis_(&redis), calls_(limit, std::move(options), std::move(keys), std::move(members), std::move(ttl)) {}

  using LimiterFacade<RedisLimiter>::decide, LimiterFacade<RedisLimiter>::peek, LimiterFacade<RedisLimiter>::validate;

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
    Reservation reservation;
    reservation.decision = detail::reportedDecision(reporting(), limit, key, estimate, [&](std::exception_ptr&) {
      const auto request = calls_.prepare(key, estimate, limit);
      const Decision decision = request.decide(*redis_->run(request.call()));
      if (decision.allowed) reservation.receipt = request.receipt();
      return decision;
    });
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

 private:
  friend LimiterFacade<RedisLimiter>;
  using Calls = detail::LimiterCalls<Algorithm, KeyPolicy, MemberPolicy, TtlPolicy>;

  detail::Reporting reporting() const {
    return {options().observer, options().on_failure, Tier::redis, options().enforcement};
  }

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

}  // namespace swl
