#pragma once
// Run-time choices every limiter shares: what to answer when Redis cannot, whose clock to trust,
// whether rejected requests count, and who watches.

#include <swl/clock.hpp>
#include <swl/observer.hpp>

namespace swl {

// What tryAcquire does when Redis cannot answer (refused, timeout, broken connection, error reply).
enum class FailurePolicy {
  throw_error,  // rethrow the swl::ConnectionError / swl::ReplyError (the default: no silent guess)
  allow,        // fail open: admit, Decision::source == DecisionSource::fail_open
  deny,         // fail closed: reject, Decision::source == DecisionSource::fail_closed
};

enum class RejectedRequests {
  not_counted,  // a rejected request leaves the window as it was (the default)
  counted,      // a rejected request is recorded too, so a client that keeps hammering stays locked out
};

struct LimiterOptions {
  FailurePolicy on_failure = FailurePolicy::throw_error;
  Clock clock = Clock::redis();
  RejectedRequests rejected = RejectedRequests::not_counted;
  Observer observer;  // sees every decision and error (see observer.hpp); none by default
};

}  // namespace swl
