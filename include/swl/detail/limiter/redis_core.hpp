#pragma once
// RedisLimiter's core: an algorithm's script on one Redis key per limited key, sent through a client.

#include <swl/algorithm.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/limiter/reporting.hpp>
#include <swl/detail/script/calls.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/error.hpp>
#include <swl/options.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/client.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::detail {

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

  // `algorithm`: made by default, unless it has state of its own (PeriodicLimiter's periods).
  RedisLimiterCore(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy(),
                   MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy(),
                   Algorithm algorithm = Algorithm())
      : redis_(&redis),
        calls_(limit, std::move(options), std::move(keys), std::move(members), std::move(ttl), std::move(algorithm)) {}

  // One EVALSHA, under the limiter's own limit or one chosen for this call (a tenant's plan): the key's
  // state is the same whatever limit a call brings; docs/limits.md ("Limits per tenant") says what each
  // algorithm makes of a limit that changes.
  Decision decide(std::string_view key, std::int64_t cost, const Limit& limit) {
    const typename Calls::Request request(calls_, key, cost, limit);
    return request.decode(*redis_->run(request.call()));
  }

  Usage peek(std::string_view key, const Limit& limit) {
    const typename Calls::Request request(calls_, key, 0, limit, Calls::Use::peek);
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

  // The requests' calls in one runMany. A request refused before sending (InvalidArgument) and a call or
  // reply that failed answer their own request alone, with a blind refusal and the error.
  std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests) {
    std::vector<Outcome> outcomes(requests.size());
    std::deque<typename Calls::Request> prepared;  // a deque: each request stays where it is made
    std::vector<std::size_t> sent;                 // prepared[i] answers requests[sent[i]]
    sent.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const Limit& asked = requests[i].limitOr(limit());
      try {
        prepared.emplace_back(calls_, requests[i].key, requests[i].cost, asked);
        sent.push_back(i);
      } catch (const InvalidArgument&) {
        outcomes[i] = {blindRefusal(asked), std::current_exception()};
      }
    }
    std::vector<ScriptCall> calls;
    calls.reserve(prepared.size());
    for (const typename Calls::Request& request : prepared) calls.push_back(request.call());
    std::vector<ScriptReply> replies = redis_->runMany(calls);
    for (std::size_t i = 0; i < replies.size(); ++i) {
      Outcome& outcome = outcomes[sent[i]];
      if (!replies[i].error) {
        try {
          outcome.decision = prepared[i].decode(*replies[i].reply);
          continue;
        } catch (const Error&) {
          replies[i].error = std::current_exception();
        }
      }
      outcome = {blindRefusal(prepared[i].limit()), std::move(replies[i].error)};
    }
    return outcomes;
  }

  // The Redis key that holds `key`'s state, for operators and tests.
  std::string redisKey(std::string_view key) const { return calls_.redisKey(key); }

  static const Script& script() { return detail::scriptOf<Algorithm>(); }

 protected:
  // What the limiter's face (LimiterFace) applies around each decision.
  Reporting reporting() const { return reportingOf(options()); }

  // The client and the calls, for a core that extends this one (the log's: swl/algorithms/sliding_window.hpp).
  using Calls = detail::LimiterCalls<Algorithm, KeyPolicy, MemberPolicy, TtlPolicy>;

  RedisClient* redis_;
  Calls calls_;
};

}  // namespace swl::detail
