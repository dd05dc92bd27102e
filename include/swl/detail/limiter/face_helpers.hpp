#pragma once
// What LimiterFace (swl/limiter.hpp) does that other limiters reuse: acquire()'s waiting, and a batch
// decided one request at a time, for a limiter without a cheaper way.

#include <swl/decision.hpp>
#include <swl/detail/limiter/reporting.hpp>
#include <swl/error.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace swl::detail {

// decideMany for a limiter without a cheaper way: decide() each request in turn.
template <class Limiter>
std::vector<Outcome> eachDecided(Limiter& limiter, const std::vector<AcquireRequest>& requests) {
  std::vector<Outcome> outcomes(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Limit& limit = requests[i].limitOr(limiter.limit());
    try {
      outcomes[i].decision = limiter.decide(requests[i].key, requests[i].cost, limit);
    } catch (const Error&) {
      outcomes[i] = {blindRefusal(limit), std::current_exception()};
    }
  }
  return outcomes;
}

inline const Decision& decisionIn(const Decision& decision) noexcept { return decision; }
// An answer that holds a decision and more (ConcurrencyLimiter's Slot).
template <class Answer>
auto decisionIn(const Answer& answer) noexcept -> decltype(answer.decision()) {
  return answer.decision();
}

// The waiting of acquire: `try_once()` until its answer (a Decision, or what holds one) admits, sleeping
// each refusal's retry_after, or until that sleep would end after `deadline`: then the refusal.
template <class TryOnce>
auto retriedUntil(std::chrono::steady_clock::time_point deadline, TryOnce&& try_once) {
  for (;;) {
    auto answer = try_once();
    const Decision& decision = decisionIn(answer);
    if (decision.allowed || std::chrono::steady_clock::now() + decision.retry_after > deadline) return answer;
    std::this_thread::sleep_for(decision.retry_after);
  }
}

}  // namespace swl::detail
