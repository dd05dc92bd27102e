#pragma once
// decideMany for a core whose every request is one script call on one client, its reply a decision:
// RedisLimiter's and PeriodicLimiter's.

#include <swl/decision.hpp>
#include <swl/detail/limiter/reporting.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <cstddef>
#include <exception>
#include <utility>
#include <vector>

namespace swl::detail {

// `prepare(request, limit)` makes what a request's call views (or throws InvalidArgument, which answers
// that request alone), `callOf(prepared)` its call; the calls go out in one runMany, and each reply is
// decoded under its request's limit. An error in a call or in its reply answers that request with a blind
// refusal and the error. The outcomes come in the requests' order.
template <class Prepare, class CallOf>
std::vector<Outcome> decidedInOneBatch(RedisClient& redis, const std::vector<AcquireRequest>& requests,
                                       const Limit& own, Prepare&& prepare, CallOf&& callOf) {
  using Prepared = decltype(prepare(std::declval<const AcquireRequest&>(), own));
  std::vector<Outcome> outcomes(requests.size());
  std::vector<Prepared> prepared;  // each stays where it is while the calls that view it are in use
  std::vector<std::size_t> sent;   // prepared[i] answers requests[sent[i]]
  prepared.reserve(requests.size()), sent.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Limit& limit = requests[i].limitOr(own);
    try {
      prepared.push_back(prepare(requests[i], limit));
      sent.push_back(i);
    } catch (const InvalidArgument&) {
      outcomes[i] = {blindRefusal(limit), std::current_exception()};
    }
  }
  std::vector<ScriptCall> calls;
  calls.reserve(prepared.size());
  for (const Prepared& each : prepared) calls.push_back(callOf(each));
  std::vector<ScriptReply> replies = redis.runMany(calls);
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const Limit& limit = requests[sent[i]].limitOr(own);
    Outcome& outcome = outcomes[sent[i]];
    if (!replies[i].error) {
      try {
        outcome.decision = decodeDecision(*replies[i].reply, limit.max_requests);
        continue;
      } catch (const Error&) {
        replies[i].error = std::current_exception();
      }
    }
    outcome = {blindRefusal(limit), std::move(replies[i].error)};
  }
  return outcomes;
}

}  // namespace swl::detail
