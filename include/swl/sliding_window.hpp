#pragma once
// SlidingWindowLimiter: an exact sliding window log on one Redis key per limited key.
//
//   auto connection = swl::Connection::tcp("127.0.0.1", 6379);
//   swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
//   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
//
// A request of `cost` is admitted iff the entries in (now - window, now] plus `cost` fit in the limit.
// Each tryAcquire is one EVALSHA (see sliding_window_script.hpp), atomic on the server, so any number
// of processes and threads sharing a Redis agree exactly.
//
// Thread safety: as safe as its RedisClient. Over a ConnectionPool a limiter may be called from any
// number of threads at once; over a single Connection, from one thread at a time.

#include <swl/detail/sliding_window_rules.hpp>
#include <swl/error.hpp>
#include <swl/key_policy.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/member_policy.hpp>
#include <swl/outcome.hpp>
#include <swl/redis_client.hpp>
#include <swl/script.hpp>
#include <swl/ttl_policy.hpp>

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class SlidingWindowLimiter {
 public:
  static constexpr std::int64_t kLargestExact = detail::kLargestExact;

  SlidingWindowLimiter(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy(),
                       MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : redis_(&redis), rules_(limit, std::move(options), std::move(keys), std::move(members), std::move(ttl)) {}

  Decision tryAcquire(std::string_view key, std::int64_t cost = 1) {
    const auto request = rules_.prepare(key, cost);
    try {
      return rules_.decide(*redis_->run(request.call()), request.shard());
    } catch (const Error&) {  // Redis could not decide: the failure policy answers, or value() rethrows
      return rules_.failed(cost, std::current_exception()).value();
    }
  }

  // Decides for many requests in one pipelined round trip (per server). Outcomes come in input order;
  // an invalid request or a failed call spoils only its own Outcome. Each request is decided exactly
  // as tryAcquire would, one after another in input order (a key may appear more than once).
  std::vector<Outcome> tryAcquireMany(const std::vector<AcquireRequest>& requests) {
    std::vector<Outcome> outcomes(requests.size());
    std::vector<typename Rules::Request> prepared;
    std::vector<std::size_t> sent;  // prepared[i] answers requests[sent[i]]
    prepared.reserve(requests.size()), sent.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      try {
        prepared.push_back(rules_.prepare(requests[i].key, requests[i].cost));
        sent.push_back(i);
      } catch (const InvalidArgument&) {
        outcomes[i] = rules_.invalid(std::current_exception());
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
          outcome.decision = rules_.decide(*replies[i].reply, prepared[i].shard());
          continue;
        } catch (const Error&) {
          replies[i].error = std::current_exception();
        }
      }
      outcome = rules_.failed(prepared[i].cost(), std::move(replies[i].error));
    }
    return outcomes;
  }

  const Limit& limit() const noexcept { return rules_.limit(); }

  // The Redis key that holds `key`'s window (one of them, with a sharded KeyPolicy), for operators and tests.
  std::string redisKey(std::string_view key, std::size_t shard = 0) const { return rules_.redisKey(key, shard); }

  static const Script& script() { return detail::slidingWindowScript(); }

 private:
  using Rules = detail::SlidingWindowRules<KeyPolicy, MemberPolicy, TtlPolicy>;

  RedisClient* redis_;
  Rules rules_;
};

}  // namespace swl
