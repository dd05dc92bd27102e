#pragma once
// GcraLimiter: the generic cell rate algorithm: a token bucket as one time per key.
//
//   swl::GcraLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
//   if (swl::Decision decision = limiter.tryAcquire("user:42"); !decision) reply429(decision.retry_after);
//
// What redis-cell and redis_rate run, and what an API gateway means by "token bucket": a full bucket
// admits a burst of `limit` at once, then units come back one every window/limit, smoothly rather
// than all at once when a window ends. O(1) memory per key (one short string). Over any window at most
// the burst plus what came back in it is admitted, so a window's length can see up to twice the limit
// around a burst (measured in the README). Needs limit * window (in microseconds) below 2^53.
//
// Same key policies, clocks, failure policies and connections as SlidingWindowLimiter; batches,
// acquire, peek and reset are BasicLimiter's. README "Algorithms" compares them, measured.

#include <swl/basic_limiter.hpp>
#include <swl/detail/limiter_rules.hpp>
#include <swl/detail/script_prelude.hpp>
#include <swl/gcra_script.hpp>
#include <swl/key_policy.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/redis_client.hpp>
#include <swl/script.hpp>
#include <swl/ttl_policy.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace swl {
namespace detail {

struct Gcra {
  static constexpr std::string_view kName = "swl::GcraLimiter";
  static const Script& script() {
    static const std::string text = std::string(kScriptPrelude).append(kGcraScript);
    static const Script gcra("gcra", text);
    return gcra;
  }
  static void check(const Limit& limit) { checkScaledExact(limit, kName); }
};

}  // namespace detail

template <class KeyPolicy = PrefixKey>
class GcraLimiter : public BasicLimiter<detail::LimiterRules<detail::Gcra, KeyPolicy, detail::NoMember, WindowTtl>> {
 public:
  GcraLimiter(RedisClient& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy())
      : GcraLimiter::BasicLimiter(redis, limit, std::move(options), std::move(keys), detail::NoMember(), WindowTtl()) {}

  static const Script& script() { return detail::Gcra::script(); }
};

}  // namespace swl
