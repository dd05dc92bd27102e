#pragma once
// BasicLimiter: what every blocking limiter offers, whatever its algorithm (SlidingWindowLimiter,
// SlidingCounterLimiter, FixedWindowLimiter, GcraLimiter derive from it):
//
//   tryAcquire(key, cost)            one decision, one EVALSHA
//   tryAcquireMany(requests)         many decisions, one pipelined round trip (per server)
//   acquire(key, cost, deadline)     waits (sleeping retry_after, never spinning) until admitted or the deadline
//   peek(key)                        what the key has used, recording nothing
//   reset(key)                       forgets the key: an operator un-blocking a user
//
// Thread safety: as safe as its RedisClient. Over a ConnectionPool or a ClusterConnection a limiter may
// be called from any number of threads at once; over a single Connection, from one thread at a time.

#include <swl/detail/decision_reply.hpp>
#include <swl/detail/waiting.hpp>
#include <swl/error.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/observer.hpp>
#include <swl/outcome.hpp>
#include <swl/redis_client.hpp>
#include <swl/script.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

template <class Rules>
class BasicLimiter : public detail::Waiting<BasicLimiter<Rules>> {
 public:
  Decision tryAcquire(std::string_view key, std::int64_t cost = 1) {
    const detail::Observation observation(rules_.options().observer, key, cost);
    std::exception_ptr failure;
    const Outcome outcome = attempt(key, cost, failure);
    observation.report(outcome.ok() ? &outcome.decision : nullptr, failure);
    return outcome.value();
  }

  // Decides for many requests in one pipelined round trip (per server). Outcomes come in input order;
  // an invalid request or a failed call spoils only its own Outcome. Each request is decided exactly
  // as tryAcquire would, one after another in input order (a key may appear more than once).
  std::vector<Outcome> tryAcquireMany(const std::vector<AcquireRequest>& requests) {
    const detail::Observation batch(rules_.options().observer, {}, 0);
    std::vector<Outcome> outcomes(requests.size());
    std::vector<std::exception_ptr> failures(requests.size());
    std::vector<typename Rules::Request> prepared;
    std::vector<std::size_t> sent;  // prepared[i] answers requests[sent[i]]
    prepared.reserve(requests.size()), sent.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      try {
        prepared.push_back(rules_.prepare(requests[i].key, requests[i].cost));
        sent.push_back(i);
      } catch (const InvalidArgument&) {
        failures[i] = std::current_exception();
        outcomes[i] = rules_.invalid(failures[i]);
      }
    }
    std::vector<ScriptReply> replies = redis_->runMany(calls(prepared));
    for (std::size_t i = 0; i < replies.size(); ++i) {
      Outcome& outcome = outcomes[sent[i]];
      if (!replies[i].error) {
        try {
          outcome.decision = rules_.decide(*replies[i].reply, prepared[i].shard());
          continue;
        } catch (const Error&) {
          replies[i].error = std::current_exception();
        }
      }
      failures[sent[i]] = replies[i].error;
      outcome = rules_.failed(prepared[i].cost(), std::move(replies[i].error));
    }
    for (std::size_t i = 0; i < requests.size(); ++i) {  // each request's latency is the whole batch's
      batch.reportFor(requests[i].key, requests[i].cost, outcomes[i].ok() ? &outcomes[i].decision : nullptr,
                      failures[i]);
    }
    return outcomes;
  }

  // What `key` has used of its limit now, recording nothing. Redis must answer: errors are thrown,
  // whatever the failure policy (there is no decision to fall back on).
  Usage peek(std::string_view key) {
    const auto requests = rules_.preparePeek(key);
    std::vector<ScriptReply> replies = redis_->runMany(calls(requests));
    Usage usage;
    usage.limit = rules_.limit().max_requests;
    for (std::size_t shard = 0; shard < replies.size(); ++shard) {
      if (replies[shard].error) std::rethrow_exception(replies[shard].error);
      const Decision seen = detail::decodeDecision(*replies[shard].reply, rules_.shardLimit(shard));
      usage.remaining += seen.remaining;
      usage.reset_after = std::max(usage.reset_after, seen.reset_after);
    }
    usage.used = usage.limit - usage.remaining;
    return usage;
  }

  // Forgets everything recorded for `key`, so its next request meets an empty window. Returns whether
  // there was anything to forget. Errors are thrown, whatever the failure policy.
  bool reset(std::string_view key) {
    const std::vector<std::string> redis_keys = rules_.redisKeys(key);
    std::vector<ScriptCall> deletions;
    for (const std::string_view redis_key : redis_keys)
      deletions.push_back(ScriptCall(forgetScript(), {redis_key}, {}));
    bool forgot = false;
    for (ScriptReply& reply : redis_->runMany(deletions)) {
      if (reply.error) std::rethrow_exception(reply.error);
      forgot = forgot || (reply.reply->type == REDIS_REPLY_INTEGER && reply.reply->integer > 0);
    }
    return forgot;
  }

  // Throws InvalidArgument for a request this limiter could never take (empty key, cost out of range).
  void validate(std::string_view key, std::int64_t cost) const { rules_.validate(key, cost); }

  const Limit& limit() const noexcept { return rules_.limit(); }

  const LimiterOptions& options() const noexcept { return rules_.options(); }

  // The Redis key that holds `key`'s state (one of them, with a sharded KeyPolicy), for operators and tests.
  std::string redisKey(std::string_view key, std::size_t shard = 0) const { return rules_.redisKey(key, shard); }

 protected:
  template <class... RuleArguments>
  explicit BasicLimiter(RedisClient& redis, RuleArguments&&... rule_arguments)
      : redis_(&redis), rules_(std::forward<RuleArguments>(rule_arguments)...) {}

 private:
  // One decision as an Outcome; `failure` keeps why Redis could not decide, even when the policy answered.
  Outcome attempt(std::string_view key, std::int64_t cost, std::exception_ptr& failure) {
    try {
      const auto request = rules_.prepare(key, cost);
      return {rules_.decide(*redis_->run(request.call()), request.shard()), nullptr};
    } catch (const Error&) {  // invalid input stays an error; otherwise the failure policy may answer
      failure = std::current_exception();
      return rules_.failed(cost, failure);
    }
  }

  // Deletes the key; a script, so that every RedisClient (a cluster included) runs it like the others.
  static const Script& forgetScript() {
    static const Script forget("forget", "return redis.call('DEL', KEYS[1])");
    return forget;
  }

  static std::vector<ScriptCall> calls(const std::vector<typename Rules::Request>& requests) {
    std::vector<ScriptCall> calls;
    calls.reserve(requests.size());
    for (const auto& request : requests) calls.push_back(request.call());
    return calls;
  }

  RedisClient* redis_;
  Rules rules_;
};

}  // namespace swl
