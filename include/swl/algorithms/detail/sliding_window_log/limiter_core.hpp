#pragma once
// The log's limiter core: a RedisLimiter's, and what only a log can do (reserve and settle, lease, give
// back, check a key's log). SlidingWindowLimiter (algorithms/sliding_window.hpp) is its face.

#include <swl/algorithms/sliding_window_log.hpp>
#include <swl/decision.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/limiter/reporting.hpp>
#include <swl/error.hpp>
#include <swl/redis_limiter.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace swl::detail {

// The check_log script (SlidingWindowLog::kCheckScript), assembled as the log's other scripts are.
inline const Script& logCheckScript() {
  static const std::string text = scriptText<SlidingWindowLog>(SlidingWindowLog::kCheckScript);
  static const Script script(SlidingWindowLog::kCheckScriptName, text);
  return script;
}

// What the log's lease() asks for beyond the request in hand (LeasingLimiter fills it in).
struct LeaseTerms {
  std::int64_t units = 0;                 // units wanted in all, the request's cost among them (cost..limit)
  std::chrono::microseconds duration{0};  // how long the holder may use them (0..window)
  std::int64_t room_divisor = 4;          // take at most 1/room_divisor of what the window has room for
  Receipt previous;                       // the holder's previous lease on this key, given back first
  std::int64_t previous_used = 0;         // how many of its units were used
};

// The log's lease(): the decision for the request in hand, and the entry it recorded.
struct LeaseGrant {
  Decision decision;
  Receipt receipt;
};

// The log's limiter: a RedisLimiter's core, and what only a log can do, since it records one entry per
// request: reserve and settle a cost known afterwards, lease units as one entry ahead of now (the
// primitive LeasingLimiter is built on), give a lease back. Their Lua is SlidingWindowLog's above.
template <class KeyPolicy, class MemberPolicy, class TtlPolicy>
class SlidingWindowLimiterCore : public RedisLimiterCore<SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy> {
  using Core = RedisLimiterCore<SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy>;

 public:
  using Core::Core;

  // tryAcquire for a cost known only afterwards (an LLM call's tokens): `estimate` units are decided
  // and, when admitted, recorded as one entry whose receipt settle() takes once the real cost is known.
  // A reservation never settled simply ages out with the window.
  Reservation reserve(std::string_view key, std::int64_t estimate) { return reserve(key, estimate, this->limit()); }
  Reservation reserve(std::string_view key, std::int64_t estimate, const Limit& limit) {
    const ReportedCall call(this->reporting(), key, estimate, limit);
    Reservation reservation;
    try {
      const typename Calls::Request request(calls_, key, estimate, limit);
      const Decision decision = request.decode(*redis_->run(request.call()));
      // A refusal is recorded too when rejections count: then it has an entry to settle as well.
      if (decision.allowed || this->options().rejected == RejectedRequests::counted) {
        reservation.receipt = request.receipt();
      }
      reservation.decision = call.report(decision);
    } catch (const Error&) {
      reservation.decision = call.reportFailure(std::current_exception());
    }
    return reservation;
  }

  // The reservation now holds `actual` units: the difference is refunded (actual below the estimate; 0
  // takes it all back) or charged (above it: recorded even past the limit, since the units were spent),
  // exactly, at the reservation's own time. Settling twice changes nothing the second time, and a
  // reservation that has left the window (or whose receipt is empty) is left alone. Returns whether
  // this call settled it. Errors are thrown, whatever the failure policy (there is no decision to make).
  bool settle(const Receipt& receipt, std::int64_t actual) { return runSettleScript(receipt, actual, "settle"); }

  // The primitive LeasingLimiter is built on (use that): `cost` units for `key` decided now and, when
  // they fit, up to `terms.units` recorded in all as one entry scored at now + terms.duration, after
  // `terms.previous` is given back. Units beyond `cost` may be used in memory until terms.duration after
  // a moment on a monotonic clock read before this call was sent, and never later: the guarantee rests
  // on it. LeaseGrant::receipt.units is what was recorded (0 when refused; `cost` alone when no more fit or
  // were asked for, and then nothing is leased).
  LeaseGrant lease(std::string_view key, std::int64_t cost, const LeaseTerms& terms) {
    return lease(key, cost, this->limit(), terms);
  }
  LeaseGrant lease(std::string_view key, std::int64_t cost, const Limit& limit, const LeaseTerms& terms) {
    const typename Calls::Request request(calls_, key, cost, limit);
    checkTerms(terms, cost, limit, key);
    const typename Calls::LeaseTexts texts{IntegerText(terms.units), IntegerText(terms.duration.count()),
                                           IntegerText(terms.room_divisor), IntegerText(terms.previous.units),
                                           IntegerText(terms.previous_used)};
    const Reply reply = redis_->run(calls_.leaseCall(request, texts, terms.previous));
    std::int64_t values[5];
    readIntegers(*reply, values, 5);
    LeaseGrant lease;
    lease.decision = checkedDecision(values[0], values[1], values[2], values[3], limit.max_requests);
    const std::int64_t units = values[4];
    if (lease.decision.allowed ? units < cost || units > std::max(cost, terms.units) : units != 0) {
      throw badReply(std::to_string(units) + " units leased for a request of " + std::to_string(cost) + " asking " +
                     std::to_string(terms.units));
    }
    if (lease.decision.allowed) {
      lease.receipt = request.receipt();
      lease.receipt.units = units;
    }
    return lease;
  }

  // Gives a lease back (LeasingLimiter): of its units only `used` still count, until its end + window.
  // Returns whether there was anything to give back.
  bool giveBack(const Receipt& lease, std::int64_t used) { return runSettleScript(lease, used, "giveBack"); }

  // Checks `key`'s log against its entries (the check_log script): every sum of its bookkeeping and its
  // nodes recomputed. Its work grows with the set, so it is for tests and operators, never a request's
  // path. Throws ReplyError naming the first thing that disagrees.
  LogCheck checkLog(std::string_view key) {
    const Reply reply = redis_->run(logCheckScript(), {this->redisKey(key)}, {});
    const ReplyView answer = *reply;
    if (answer.size() != 7 || !answer[0].isString()) throw badReply("something other than a log check");
    LogCheck check;
    check.counted_by_units = answer[0].text() == "units";
    check.entries = answer[1].integer();
    check.units = answer[2].integer();
    for (std::size_t level = 0; level < check.nodes.size(); ++level) check.nodes[level] = answer[3 + level].integer();
    return check;
  }

 private:
  using Core::calls_;
  using Core::redis_;
  using typename Core::Calls;

  bool runSettleScript(const Receipt& receipt, std::int64_t actual, std::string_view call) {
    if (!receipt) return false;
    if (actual < 0 || actual >= kLargestExact) {
      throw InvalidArgument(std::string(SlidingWindowLog::kName) + "::" + std::string(call) + ": " +
                            std::to_string(actual) + " units are not in 0..2^53-1 (key " +
                            detail::quoted(receipt.redis_key) + ")");
    }
    const typename Calls::SettleTexts texts = calls_.settleTexts(receipt, actual);
    return redis_->run(calls_.settleCall(receipt, texts))->integer() == 1;
  }

  void checkTerms(const LeaseTerms& terms, std::int64_t cost, const Limit& limit, std::string_view key) const {
    const auto refuse = [&](const std::string& why) {
      return InvalidArgument(std::string(SlidingWindowLog::kName) + "::lease: " + why + " (key " + detail::quoted(key) +
                             ")");
    };
    if (terms.units < cost || terms.units > limit.max_requests) {
      throw refuse(std::to_string(terms.units) + " units wanted, not in cost " + std::to_string(cost) + "..limit " +
                   std::to_string(limit.max_requests));
    }
    if (terms.duration.count() < 0 || terms.duration > limit.window) {
      throw refuse("a lease of " + std::to_string(terms.duration.count()) + " us is not in 0..the window");
    }
    if (terms.room_divisor < 1) throw refuse("room_divisor " + std::to_string(terms.room_divisor) + " is below 1");
    if (terms.previous && (terms.previous_used < 0 || terms.previous_used > terms.previous.units)) {
      throw refuse("the previous lease used " + std::to_string(terms.previous_used) + " of its " +
                   std::to_string(terms.previous.units) + " units");
    }
  }
};

}  // namespace swl::detail
