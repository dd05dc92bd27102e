#pragma once
/// \file
/// What one limiter's calls send, without I/O: a request checked and encoded as its script's arguments
/// (the limit's numbers as text, made once per limit; the clock; the member), for the blocking
/// RedisLimiter and the async limiter alike.

#include <swl/algorithm.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/detail/script/deadline.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/client.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace swl::detail {

// Now as a script takes it (ARGV[4]): the client's clock in microseconds, as text, or nothing when the
// script reads Redis's own. Scores hold times exactly only below 2^53 us, and `window` (the longest the
// call reads) must fit before now. On Redis's clock a call that `expires` carries the room for its
// deadline instead, '-' and 16 zeros, which the connection fills in as it sends the call
// (ScriptCall::deadlineArgument): a call whose failure the caller may answer without Redis must not be
// recorded when it runs later.
class ScriptNow {
 public:
  ScriptNow(const Clock& clock, std::chrono::microseconds window, bool expires = false) {
    if (clock.isRedisTime()) {
      carries_deadline_ = expires;
      return;
    }
    const std::int64_t now = clock.now().count();
    if (now < window.count() || now >= kLargestExact) {
      throw InvalidArgument("swl: the clock reads " + std::to_string(now) +
                            " us, outside the window .. 2^53 us that scores can hold exactly");
    }
    client_now_ = std::chrono::microseconds(now);
    text_ = IntegerText(now);
  }

  // The argument: '' on Redis's clock, or the room for a deadline.
  std::string_view argument() const noexcept { return carries_deadline_ ? kNoDeadline : text_.view(); }
  // The client's clock, or none on Redis's.
  const std::optional<std::chrono::microseconds>& clientNow() const noexcept { return client_now_; }
  // Whether the argument is the room for a deadline.
  bool carriesDeadline() const noexcept { return carries_deadline_; }

 private:
  std::optional<std::chrono::microseconds> client_now_;
  IntegerText text_;
  bool carries_deadline_ = false;
};

// A member policy's member as the log can record it. The log's own members begin with, or hold, bytes
// below ',' ('!', '#', '*', '+', ')') and '=' (which marked units in sets of 0.2): a member holding one
// could be read as one of them.
inline std::string checkedMember(std::string_view limiter, std::string member) {
  const auto marks = [](char byte) { return static_cast<unsigned char>(byte) < ',' || byte == '='; };
  if (std::any_of(member.begin(), member.end(), marks)) {
    throw InvalidArgument(std::string(limiter) + ": the member policy made the member " + detail::quoted(member) +
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
    // The decision's call: the prelude's arguments, then the algorithm's own, if it takes one.
    ScriptCall call() const {
      if constexpr (hasArgument<Algorithm>) {
        return callOf(*calls_->script_, calls_->count_rejected_, {argument_});
      } else {
        return callOf(*calls_->script_, calls_->count_rejected_, {});
      }
    }
    std::int64_t cost() const noexcept { return cost_; }
    const Limit& limit() const noexcept { return limit_.limit; }

    // The script's answer to this request.
    Decision decode(ReplyView reply) const { return decodeDecision(reply, limit().max_requests); }

    // Where this request's entry is, for settling it later.
    Receipt receipt() const { return {redis_key_, member_, cost_, limit()}; }

   private:
    friend class LimiterCalls;

    // A call of `script` for this request: the prelude's arguments, then `own`, then the block's key and
    // length when the limiter blocks (LimiterOptions::block_for).
    ScriptCall callOf(const Script& script, std::string_view count_rejected,
                      std::initializer_list<std::string_view> own) const {
      std::optional<BlockArguments> block;
      if (calls_->block_length_) block = BlockArguments{block_key_, *calls_->block_length_};
      return preludeCall(
          script, redis_key_,
          {limit_.window, limit_.max_requests, cost_text_, now_.argument(), member_, limit_.ttl, count_rejected}, own,
          block);
    }

    Request(const LimiterCalls& calls, const LimitArguments& limit, std::string redis_key, std::string member,
            std::int64_t cost)
        : calls_(&calls),
          limit_(limit),
          redis_key_(std::move(redis_key)),
          block_key_(calls.block_length_ ? blockKeyOf(redis_key_) : std::string()),
          member_(std::move(member)),
          cost_(cost),
          cost_text_(cost),
          now_(calls.options_.clock, limit.limit.window, cost > 0 && calls.expiring()) {
      if constexpr (hasArgument<Algorithm>) argument_ = std::string_view(calls.algorithm_.argument(now_.clientNow()));
    }

    const LimiterCalls* calls_;
    LimitArguments limit_;
    std::string redis_key_;
    std::string block_key_;  // empty unless the limiter blocks
    std::string member_;
    std::int64_t cost_;
    IntegerText cost_text_;
    ScriptNow now_;
    std::string argument_;  // the algorithm's own (ARGV[8]), if it takes one
  };

  LimiterCalls(Limit limit, LimiterOptions options, KeyPolicy keys, MemberPolicy members, TtlPolicy ttl,
               Algorithm algorithm)
      : algorithm_(std::move(algorithm)),
        options_(std::move(options)),
        keys_(std::move(keys)),
        members_(std::move(members)),
        ttl_(std::move(ttl)),
        count_rejected_(options_.rejected == RejectedRequests::counted ? "1" : "0"),
        block_length_(blockLength(options_.block_for, Algorithm::kName)),
        script_(&scriptOf<Algorithm>(block_length_.has_value())),
        own_(arguments(limit)) {}

  // A request under `limit`, the limiter's own or one chosen for this call (a tenant's plan), checked as
  // the constructor checks one. Throws InvalidArgument for a request no limit could take; nothing has
  // been sent then.
  Request prepare(std::string_view key, std::int64_t cost, const Limit& limit) {
    const bool own = &limit == &own_.limit || limit == own_.limit;  // most calls pass limit() itself
    std::optional<LimitArguments> chosen;
    if (!own) chosen = arguments(limit);  // the limit first: a cost is measured against a valid one
    checkRequest(Algorithm::kName, "tryAcquire", key, cost, limit.max_requests);
    std::string member;
    if constexpr (Algorithm::kRecordsMembers) member = checkedMember(Algorithm::kName, members_.next());
    return Request(*this, own ? own_ : *chosen, redisKey(key), std::move(member), cost);
  }

  // settle()'s call for `receipt` now holding `actual` units, in the window it was recorded under. The
  // texts it views live in `texts`.
  struct SettleTexts {
    LimitArguments limit;
    IntegerText actual;
    ScriptNow now;
    IntegerText recorded;
  };
  SettleTexts settleTexts(const Receipt& receipt, std::int64_t actual) const {
    LimitArguments limit = arguments(receipt.limit);
    const ScriptNow now(options_.clock, limit.limit.window);
    return {std::move(limit), IntegerText(actual), now, IntegerText(receipt.units)};
  }
  ScriptCall settleCall(const Receipt& receipt, const SettleTexts& texts) const {
    return preludeCall(scriptOf<Algorithm, ScriptRole::settle>(), receipt.redis_key,
                       {texts.limit.window, texts.limit.max_requests, texts.actual, texts.now.argument(),
                        receipt.member, texts.limit.ttl, "0"},
                       {texts.recorded});
  }

  // lease()'s call: `request` and the terms beyond it. The texts it views live in `texts`.
  struct LeaseTexts {
    IntegerText units, duration, room_divisor, previous_units, previous_used;
  };
  ScriptCall leaseCall(const Request& request, const LeaseTexts& texts, const Receipt& previous) const {
    return request.callOf(
        scriptOf<Algorithm, ScriptRole::lease>(block_length_.has_value()), "0",
        {texts.units, texts.duration, texts.room_divisor, previous.member, texts.previous_units, texts.previous_used});
  }

  // A cost-0 request: the scripts read such a request's window and record nothing.
  Request preparePeek(std::string_view key, const Limit& limit) const {
    if (key.empty()) throw InvalidArgument(std::string(Algorithm::kName) + "::peek: the key is empty");
    return Request(*this, limit == own_.limit ? own_ : arguments(limit), redisKey(key), std::string(), 0);
  }

  static Usage usage(ReplyView reply, const Request& peek) { return decodeUsage(reply, peek.limit().max_requests); }

  // Throws what prepare() would, sending nothing.
  void validate(std::string_view key, std::int64_t cost, const Limit& limit) const {
    if (limit != own_.limit) arguments(limit);
    checkRequest(Algorithm::kName, "tryAcquire", key, cost, limit.max_requests);
  }

  std::string redisKey(std::string_view key) const { return keys_.key(key); }
  const Limit& limit() const noexcept { return own_.limit; }
  // Whether a decision's call carries its deadline (ScriptNow): under FailurePolicy::deny, whose refusal
  // at the deadline must not be counted when Redis runs the call later. A request the failure policy
  // admitted was served, and counting it late is right; an error leaves the request to its caller.
  bool expiring() const noexcept { return options_.on_failure == FailurePolicy::deny; }
  const LimiterOptions& options() const noexcept { return options_; }
  const Algorithm& algorithm() const noexcept { return algorithm_; }

 private:
  LimitArguments arguments(const Limit& limit) const {
    algorithm_.check(checkedLimit(limit));
    const std::chrono::milliseconds ttl = checkedTtl(ttl_, limit.window, Algorithm::kName);
    return {limit, IntegerText(limit.window.count()), IntegerText(limit.max_requests), IntegerText(ttl.count())};
  }

  Algorithm algorithm_;
  LimiterOptions options_;
  KeyPolicy keys_;
  MemberPolicy members_;
  TtlPolicy ttl_;
  std::string_view count_rejected_;
  std::optional<IntegerText> block_length_;  // LimiterOptions::block_for as text; none when it is off
  const Script* script_;                     // the decision's script, resolved once, with the limiter
  LimitArguments own_;
};

}  // namespace swl::detail
