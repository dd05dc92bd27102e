#pragma once
/// \file
/// What one limiter's calls send, without I/O: a request checked and encoded as its script's arguments
/// (the limit's numbers as text, made once per limit; the clock; the member), for the blocking
/// RedisLimiter and the async limiter alike.

#include <swl/algorithm.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/detail/script/assembly.hpp>
#include <swl/detail/script/now.hpp>
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

  // What a request is for: a decision (checked, with a member when the algorithm records one), or a peek
  // (cost 0, which the scripts read and record nothing for).
  enum class Use { decide, peek };

  // One request: checked, its texts made, and its call laid out once, in hiredis's form, viewing them.
  // Because its call views it, a request stays where it is made: it is neither copied nor moved.
  class Request {
   public:
    // `cost` units of `key` under `limit`, the limiter's own or one chosen for this call (a tenant's plan,
    // checked as the limiter's own was). Throws InvalidArgument for a request no limit could take; nothing
    // has been sent then.
    Request(LimiterCalls& calls, std::string_view key, std::int64_t cost, const Limit& limit,
            Use use = Use::decide)
        : limit_(&limit == &calls.own_.limit || limit == calls.own_.limit  // most calls pass limit() itself
                     ? calls.own_
                     : calls.arguments(limit)),  // the limit first: a cost is measured against a valid one
          cost_(cost),
          cost_text_(cost),
          now_(calls.options_.clock, limit_.limit.window, cost > 0 && calls.expiring()),
          member_(Algorithm::kRecordsMembers && use == Use::decide
                      ? checkedMember(Algorithm::kName, calls.members_.next())
                      : std::string()),
          prelude_{limit_.window, limit_.max_requests, cost_text_,           now_.argument(),
                   member_,       limit_.ttl,          calls.count_rejected_} {
      if (use == Use::decide) {
        checkRequest(Algorithm::kName, "tryAcquire", key, cost, limit_.limit.max_requests);
      } else if (key.empty()) {
        throw InvalidArgument(std::string(Algorithm::kName) + "::peek: the key is empty");
      }
      redis_key_ = calls.keys_.key(key);
      if (calls.block_length_) {
        block_key_ = blockKeyOf(redis_key_);
        block_ = BlockArguments{block_key_, *calls.block_length_};
      }
      if constexpr (hasArgument<Algorithm>) {
        argument_ = calls.algorithm_.argument(now_.clientNow());
        call_.emplace(preludeCall(*calls.script_, redis_key_, prelude_, {argument_}, block_));
      } else {
        call_.emplace(preludeCall(*calls.script_, redis_key_, prelude_, {}, block_));
      }
    }
    Request(const Request&) = delete;
    Request& operator=(const Request&) = delete;

    // The call: the prelude's arguments, then the algorithm's own, if it takes one, then the block's.
    const ScriptCall& call() const noexcept { return *call_; }
    std::int64_t cost() const noexcept { return cost_; }
    const Limit& limit() const noexcept { return limit_.limit; }

    // The script's answer to this request.
    Decision decode(ReplyView reply) const { return decodeDecision(reply, limit().max_requests); }

    // Where this request's entry is, for settling it later.
    Receipt receipt() const { return {redis_key_, member_, cost_, limit()}; }

   private:
    friend class LimiterCalls;

    LimitArguments limit_;
    std::int64_t cost_;
    IntegerText cost_text_;
    ScriptNow now_;
    std::string member_;        // empty for a peek and for an algorithm that records none
    PreludeArguments prelude_;  // views of the texts above
    std::string redis_key_;
    std::string block_key_;  // empty unless the limiter blocks
    std::optional<BlockArguments> block_;
    std::string argument_;            // the algorithm's own (ARGV[8]), if it takes one
    std::optional<ScriptCall> call_;  // made last, viewing the texts above
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
    PreludeArguments prelude = request.prelude_;
    prelude.count_rejected = "0";
    return preludeCall(
        scriptOf<Algorithm, ScriptRole::lease>(block_length_.has_value()), request.redis_key_, prelude,
        {texts.units, texts.duration, texts.room_divisor, previous.member, texts.previous_units, texts.previous_used},
        request.block_);
  }

  static Usage usage(ReplyView reply, const Request& peek) { return decodeUsage(reply, peek.limit().max_requests); }

  // Throws what a Request would, sending nothing.
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
