#pragma once
// What every limiter (any algorithm; sync, batch or async) does around the round trip: check the request,
// build the script's arguments, read its reply, and answer for Redis when Redis cannot.
//
// An Algorithm brings the rest, as a type with
//     static const Script& script();             // its own Lua script, run with EVALSHA
//     static constexpr std::string_view kName;   // "swl::FixedWindowLimiter", for error messages
//     static void check(const Limit&);           // limits it cannot keep exactly throw InvalidArgument
// Every script takes the same arguments (window, limit, cost, now, member, ttl, count-rejected; see
// sliding_window_script.hpp), treats cost 0 as a peek that records nothing, and answers
// {allowed, remaining, retry_after_us, reset_after_us}.

#include <swl/detail/decision_reply.hpp>
#include <swl/detail/failure_decisions.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/detail/thread_random.hpp>
#include <swl/error.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/outcome.hpp>
#include <swl/script.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace swl::detail {

// A KeyPolicy with shards() spreads each key over that many Redis keys (see ShardedKey).
template <class KeyPolicy, class = void>
struct IsSharded : std::false_type {};
template <class KeyPolicy>
struct IsSharded<KeyPolicy, std::void_t<decltype(std::declval<const KeyPolicy&>().shards())>> : std::true_type {};

// The counter scripts multiply counts by the window to stay in integers; that product must be exact.
inline void checkScaledExact(const Limit& limit, std::string_view limiter) {
  if (limit.window.count() > 0 && limit.max_requests > (kLargestExact - 1) / limit.window.count()) {
    throw InvalidArgument(std::string(limiter) + ": a limit of " + std::to_string(limit.max_requests) + " per " +
                          std::to_string(limit.window.count()) +
                          " us is too fine to count exactly (limit x window must stay below 2^53 microseconds); "
                          "use a shorter window or a SlidingWindowLimiter");
  }
}

// For algorithms that record no member per request (counters).
struct NoMember {
  std::string next() { return {}; }
};

template <class Algorithm, class KeyPolicy, class MemberPolicy, class TtlPolicy>
class LimiterRules {
 public:
  // One request's arguments, owned until its call has been sent. call() views into it, so it must
  // stay where it is while a call made from it is in use.
  class Request {
   public:
    ScriptCall call() const {
      const std::string_view now = rules_->options_.clock.isRedisTime() ? std::string_view() : now_.view();
      return ScriptCall(Algorithm::script(), {redis_key_},
                        {rules_->window_text_, rules_->shards_[shard_].limit_text, cost_text_, now, member_,
                         rules_->ttl_text_, rules_->count_rejected_});
    }
    std::int64_t cost() const noexcept { return cost_; }
    std::size_t shard() const noexcept { return shard_; }

   private:
    friend class LimiterRules;
    Request(const LimiterRules& rules, std::size_t shard, std::string redis_key, std::string member, std::int64_t cost,
            std::int64_t now)
        : rules_(&rules),
          shard_(shard),
          redis_key_(std::move(redis_key)),
          member_(std::move(member)),
          cost_(cost),
          cost_text_(cost),
          now_(now) {}

    const LimiterRules* rules_;
    std::size_t shard_;
    std::string redis_key_;
    std::string member_;
    std::int64_t cost_;
    IntegerText cost_text_;
    IntegerText now_;
  };

  LimiterRules(Limit limit, LimiterOptions options, KeyPolicy keys, MemberPolicy members, TtlPolicy ttl)
      : limit_(validated(limit)),
        options_(std::move(options)),
        keys_(std::move(keys)),
        members_(std::move(members)),
        shards_(shareOut(limit_.max_requests, keys_)),
        window_text_(std::to_string(limit.window.count())),
        ttl_text_(std::to_string(validatedTtl(ttl.ttl(limit.window), limit.window).count())),
        count_rejected_(options_.rejected == RejectedRequests::counted ? "1" : "0") {}

  // Throws InvalidArgument for a request no limit could take; nothing has been sent then.
  Request prepare(std::string_view key, std::int64_t cost) {
    validate(key, cost);
    const std::size_t shard =
        shards_.size() == 1 ? 0 : std::uniform_int_distribution<std::size_t>(0, shards_.size() - 1)(threadRandom());
    return Request(*this, shard, redisKey(key, shard), members_.next(), cost, now());
  }

  // A cost-0 request per shard: the scripts read such a request's window and record nothing.
  std::vector<Request> preparePeek(std::string_view key) const {
    if (key.empty()) throw InvalidArgument(std::string(Algorithm::kName) + "::peek: the key is empty");
    std::vector<Request> requests;
    for (std::size_t shard = 0; shard < shards_.size(); ++shard) {
      requests.push_back(Request(*this, shard, redisKey(key, shard), std::string(), 0, now()));
    }
    return requests;
  }

  std::vector<std::string> redisKeys(std::string_view key) const {
    if (key.empty()) throw InvalidArgument(std::string(Algorithm::kName) + "::reset: the key is empty");
    std::vector<std::string> keys;
    for (std::size_t shard = 0; shard < shards_.size(); ++shard) keys.push_back(redisKey(key, shard));
    return keys;
  }

  std::int64_t shardLimit(std::size_t shard) const { return shards_[shard].limit; }

  // The script's answer to a request sent to `shard`. A shard's remaining room stands for the key's
  // as that room times the number of shards: the best guess one shard's count allows.
  Decision decide(const redisReply& reply, std::size_t shard = 0) const {
    Decision decision = decodeDecision(reply, shards_[shard].limit);
    if (shards_.size() > 1) {
      decision.limit = limit_.max_requests;
      decision.remaining =
          std::min(limit_.max_requests, decision.remaining * static_cast<std::int64_t>(shards_.size()));
    }
    return decision;
  }

  // Redis could not decide: the failure policy answers, or the error is handed on. A call the client
  // refused to send (keys in two cluster slots) is the caller's mistake, never the policy's to paper over.
  Outcome failed(std::int64_t cost, std::exception_ptr error) const {
    if (options_.on_failure == FailurePolicy::throw_error || isInvalidArgument(error)) {
      return {denied(), std::move(error)};
    }
    return {failureDecision(cost), nullptr};
  }

  // The request itself was wrong: always an error, whatever the failure policy.
  Outcome invalid(std::exception_ptr error) const { return {denied(), std::move(error)}; }

  const Limit& limit() const noexcept { return limit_; }

  // Throws InvalidArgument for a request no limit could take.
  void validate(std::string_view key, std::int64_t cost) const {
    checkRequest(Algorithm::kName, "tryAcquire", key, cost, limit_.max_requests);
    if (cost > shards_.back().limit) {
      throw InvalidArgument(std::string(Algorithm::kName) + "::tryAcquire: cost " + std::to_string(cost) +
                            " exceeds a shard's share of " + std::to_string(shards_.back().limit) +
                            " of the limit, so some shards could never admit it (key '" + std::string(key) + "')");
    }
  }

  // Client-clock time in microseconds, or 0 when the script reads Redis's clock.
  std::int64_t now() const { return options_.clock.isRedisTime() ? 0 : clientNow().count(); }

  // The script arguments this limit always sends.
  std::string_view windowText() const noexcept { return window_text_; }
  std::string_view limitText() const noexcept { return shards_[0].limit_text; }
  std::string_view ttlText() const noexcept { return ttl_text_; }
  std::string_view countRejectedText() const noexcept { return count_rejected_; }
  const LimiterOptions& options() const noexcept { return options_; }

  std::string redisKey(std::string_view key, std::size_t shard = 0) const {
    if constexpr (IsSharded<KeyPolicy>::value) {
      if (shard >= shards_.size()) {
        throw InvalidArgument("swl: shard " + std::to_string(shard) + " of " + std::to_string(shards_.size()) +
                              " does not exist");
      }
      return keys_.key(key, shard);
    } else {
      if (shard != 0) throw InvalidArgument("swl: shard " + std::to_string(shard) + " of a key policy without shards");
      return keys_.key(key);
    }
  }

 private:
  struct Shard {
    std::int64_t limit;
    std::string limit_text;
  };

  // Each shard's part of the limit: equal shares, the remainder one each to the first shards, so the
  // parts add up to the limit exactly.
  static std::vector<Shard> shareOut(std::int64_t limit, const KeyPolicy& keys) {
    std::int64_t count = 1;
    if constexpr (IsSharded<KeyPolicy>::value) count = static_cast<std::int64_t>(keys.shards());
    if (count > limit) {
      throw InvalidArgument("swl: a limit of " + std::to_string(limit) + " cannot be shared out over " +
                            std::to_string(count) + " shards; use fewer shards");
    }
    std::vector<Shard> shards;
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t share = limit / count + (i < limit % count ? 1 : 0);
      shards.push_back({share, std::to_string(share)});
    }
    return shards;
  }

  static bool isInvalidArgument(const std::exception_ptr& error) {
    try {
      std::rethrow_exception(error);
    } catch (const InvalidArgument&) {
      return true;
    } catch (...) {
      return false;
    }
  }

  Decision failureDecision(std::int64_t cost) const { return policyDecision(options_.on_failure, limit_, cost); }

  static Limit validated(Limit limit) {
    Algorithm::check(checkedLimit(limit));
    return limit;
  }

  static std::chrono::milliseconds validatedTtl(std::chrono::milliseconds ttl, std::chrono::microseconds window) {
    if (ttl < window) {
      throw InvalidArgument("swl: a TTL of " + std::to_string(ttl.count()) + " ms is shorter than the window of " +
                            std::to_string(window.count()) + " us; Redis would drop entries that still count");
    }
    return ttl;
  }

  std::chrono::microseconds clientNow() const {
    const std::chrono::microseconds now = options_.clock.now();
    if (now.count() < limit_.window.count() || now.count() >= kLargestExact) {
      throw InvalidArgument("swl: the clock reads " + std::to_string(now.count()) +
                            " us, outside the window .. 2^53 us that scores can hold exactly");
    }
    return now;
  }

  Decision denied() const { return refusedBlind(limit_); }

  Limit limit_;
  LimiterOptions options_;
  KeyPolicy keys_;
  MemberPolicy members_;
  std::vector<Shard> shards_;  // one, unless KeyPolicy is sharded
  std::string window_text_;
  std::string ttl_text_;
  std::string_view count_rejected_;
};

}  // namespace swl::detail
