#pragma once
/// \file
/// MultiLimiter: several limits in one decision, all or nothing (the seed articles' layered limits).
///
///   swl::MultiLimiter<> limiter(connection, {{"user-second", swl::Limit{10, 1s}},
///                                            {"user-hour", swl::Limit{1000, 1h}},
///                                            {"endpoint", swl::Limit{5000, 1s}}});
///   swl::MultiDecision d = limiter.tryAcquire({"user:42", "user:42", "GET /search"});
///   if (!d) reply429(d.decision.retry_after, "refused by " + d.binding_name);
///   // A cost per rule (Envoy's hits_addend per descriptor): one unit of each user limit, 40 of the endpoint.
///   d = limiter.tryAcquire({"user:42", "user:42", "GET /search"}, {1, 1, 40});
///
/// One key per rule, in the rules' order, and one cost for every rule or one per rule, each judged by its
/// own rule. One EVALSHA decides them all: the request is recorded in every rule, at that rule's cost,
/// only if every rule admits it, so a refusal costs no rule anything. Each rule is an exact sliding window
/// log (algorithms/sliding_window_log.hpp); a token bucket, swl::Rule::gcra("burst", swl::Limit{20, 1s}),
/// decided and answered as GcraLimiter would (algorithms/gcra.hpp; its key lives at least as long as the
/// TTL policy says); or a quota per period such as a calendar day in a time zone (periods.hpp, calendar.hpp:
/// {"day", 10'000, CalendarPeriods::days(1, "Europe/Berlin")}),
/// under the Redis key KeyPolicy(prefix:name) makes of its key: "swl:user-second:user:42" with PrefixKey. The observer
/// sees one event per decision, under the binding rule's key and name (DecisionEvent::rule). With an access list
/// (LimiterOptions:: access), a call is refused when any rule's key is denied, and otherwise admitted untouched when
/// any rule's key is allowed; the listed key binds.
///
/// On Redis Cluster the keys of one decision must share a hash slot: use HashTagKey
/// ("swl:user-second:{user:42}") and keys with the same tag; a decision whose keys lie in different
/// slots is refused with InvalidArgument before anything is sent.
///
/// Thread safety: as safe as its RedisClient.

#include <swl/access_list.hpp>
#include <swl/algorithm.hpp>
#include <swl/algorithms/gcra.hpp>
#include <swl/algorithms/sliding_window.hpp>
#include <swl/composites/detail/multi_holds.hpp>
#include <swl/composites/detail/multi_limiter_core.hpp>
#include <swl/composites/multi_rules.hpp>
#include <swl/decision.hpp>
#include <swl/detail/holds_error.hpp>
#include <swl/detail/integer_text.hpp>
#include <swl/detail/request_checks.hpp>
#include <swl/detail/script/now.hpp>
#include <swl/detail/script/periods.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/options.hpp>
#include <swl/periods.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/client.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

/// Several limits in one decision, all or nothing, in one EVALSHA (multi_limiter.hpp says how).
template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class MultiLimiter {
  static_assert(isKeyPolicy<KeyPolicy>, "swl::MultiLimiter: KeyPolicy must be a key policy (swl/policies/keys.hpp)");
  static_assert(isMemberPolicy<MemberPolicy>,
                "swl::MultiLimiter: MemberPolicy must be a member policy (swl/policies/members.hpp)");
  static_assert(isTtlPolicy<TtlPolicy>, "swl::MultiLimiter: TtlPolicy must be a TTL policy (swl/policies/ttl.hpp)");

 public:
  /// The most rules one limiter has.
  static constexpr std::size_t kMaxRules = detail::kMaxMultiRules;

  /// A limiter of `rules` (1 to 9, each name once) over `redis`, which must outlive it; each rule's keys
  /// start with `prefix`:`name`.
  MultiLimiter(RedisClient& redis, std::vector<Rule> rules, LimiterOptions options = {}, std::string prefix = "swl",
               MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : redis_(&redis), options_(std::move(options)), members_(std::move(members)), ttl_(std::move(ttl)) {
    detail::refuseBlockFor(options_, "swl::MultiLimiter",
                           "a refusal would have to choose which rule's key to block; block with a limiter of the "
                           "key itself in front of it");
    if (rules.empty() || rules.size() > kMaxRules) {
      throw InvalidArgument("swl::MultiLimiter: " + std::to_string(rules.size()) + " rules; one decision takes 1 to " +
                            std::to_string(kMaxRules));
    }
    for (Rule& rule : rules) {
      if (rule.name.empty() || rule.name.find_first_of("{}") != std::string::npos) {
        throw InvalidArgument("swl::MultiLimiter: the rule name " + detail::quoted(rule.name) +
                              " is empty or holds a brace, which would move its keys to another hash slot");
      }
      if (std::find(names_.begin(), names_.end(), rule.name) != names_.end()) {
        throw InvalidArgument("swl::MultiLimiter: two rules share a name (" + detail::quoted(rule.name) +
                              "), so they would share Redis keys");
      }
      if (rule.algorithm == RuleAlgorithm::gcra && rule.periods) {
        throw InvalidArgument("swl::MultiLimiter: the rule " + detail::quoted(rule.name) +
                              " is a token bucket (gcra) and has periods; a rule is one or the other");
      }
      std::shared_ptr<const detail::PeriodBounds> bounds;
      if (rule.periods) bounds = std::make_shared<const detail::PeriodBounds>(std::move(*rule.periods));
      rules_.push_back({checkedRuleLimit(rule.limit, rule.algorithm, rule.name), KeyPolicy(prefix + ":" + rule.name),
                        std::move(bounds), rule.algorithm});
      names_.push_back(std::move(rule.name));
    }
  }

  /// keys[i] is the key rule i limits (the same user key for several rules is fine), and `cost` is what
  /// each rule is charged; `limits` as in the overload below. One EVALSHA. `{2, 3}` is a cost per rule;
  /// a braced single cost, `{2}`, would be this one cost for every rule (C++ prefers it to a list of one,
  /// and clang warns of braces around a scalar): write `2`, or a vector of one cost per rule.
  MultiDecision tryAcquire(const std::vector<std::string_view>& keys, std::int64_t cost = 1,
                           const std::vector<Limit>& limits = {}) {
    return tryAcquire(keys, sameCostForEveryRule(cost), limits);
  }

  /// The same with a cost per rule: costs[i] units of rule i (each 1..its limit), each rule judging its
  /// own cost, and the request recorded in every rule at its cost or in none. `limits` are chosen for this
  /// call (a tenant's plan): limits[i] for rule i, or, when empty, the rules' own. Still one EVALSHA;
  /// each log is the same whatever limit it is judged under (docs/limits.md, "Limits per tenant").
  MultiDecision tryAcquire(const std::vector<std::string_view>& keys, const std::vector<std::int64_t>& costs,
                           const std::vector<Limit>& limits = {}) {
    Prepared prepared = prepare(keys, costs, limits);
    ScriptReply reply;
    if (const std::optional<ScriptCall> call = prepared.call()) {
      try {
        reply.reply = redis_->run(*call);
      } catch (const Error&) {
        reply.error = std::current_exception();
      }
    }
    return settle(prepared, std::move(reply));
  }

  /// A decision split where it waits on Redis: prepare() makes its call, the caller sends it, and settle()
  /// answers from the reply. So a caller can send the calls of many decisions, of one MultiLimiter or of
  /// several, in one pipelined round trip (RedisClient::runMany): swl-ratelimit decides the requests that
  /// wait together so. The decisions are tryAcquire's, and so are the observer's events, the failure
  /// policy and the access list.
  ///
  ///   std::vector<swl::MultiLimiter<>::Prepared> prepared;  // reserved: each stays in place
  ///   for (const Request& each : requests) prepared.push_back(limiter.prepare(each.keys, each.costs));
  ///   std::vector<swl::ScriptCall> calls;                   // an access list may have answered some
  ///   for (const auto& each : prepared) if (auto call = each.call()) calls.push_back(*call);
  ///   std::vector<swl::ScriptReply> replies = redis.runMany(calls);
  ///   // settle each in order, handing each prepared decision that made a call the next reply
  class Prepared {
   public:
    /// The call to send, valid while this stays in place; none when the access list already answered
    /// (or preparing failed, and the failure policy answers): settle it with an empty ScriptReply.
    std::optional<ScriptCall> call() const {
      if (!text_) return std::nullopt;
      return text_->call(scriptFor(*text_));
    }

   private:
    friend class MultiLimiter;
    explicit Prepared(const Observer& observer) : observation_(observer, Tier::redis) {}

    detail::Observation observation_;
    // The decision's keys (views of the caller's, which outlive settle()) and costs, once validated: in
    // place, as a decision takes at most 9 rules, so that preparing allocates nothing for them.
    std::array<std::string_view, kMaxRules> keys_{};
    std::array<std::int64_t, kMaxRules> costs_{};
    std::vector<Limit> limits_;                    // empty for the rules' own
    std::optional<MultiDecision> listed_;          // the access list's answer
    std::optional<detail::MultiWindowCall> text_;  // the call, when Redis decides
    std::exception_ptr failure_;                   // what failed before the call could be made
  };

  /// Makes the decision's call, as tryAcquire would send it; nothing is sent. Bad input throws
  /// InvalidArgument here, as tryAcquire does. `keys` must stay valid until settle(). Recording::never
  /// makes a dry run.
  Prepared prepare(const std::vector<std::string_view>& keys, const std::vector<std::int64_t>& costs,
                   const std::vector<Limit>& limits = {}, Recording recording = Recording::when_admitted) {
    static const Observer nobody;  // a dry run is no decision to observe
    Prepared prepared(recording == Recording::never ? nobody : options_.observer);
    try {
      validate(keys, costs, limits);
      std::copy(keys.begin(), keys.end(), prepared.keys_.begin());
      std::copy(costs.begin(), costs.end(), prepared.costs_.begin());
      prepared.limits_ = limits;
      prepared.listed_ = accessListAnswers(keys, limits);
      if (!prepared.listed_) prepared.text_.emplace(callText(keys, costs, limits, recording));
    } catch (const Error&) {
      prepared.failure_ = std::current_exception();
      if (refusesToAnswer(prepared.failure_)) {
        prepared.observation_.report(keys.empty() ? std::string_view() : keys.front(),
                                     costs.empty() ? 0 : costs.front(), nullptr, prepared.failure_);
        throw;
      }
    }
    return prepared;
  }

  /// The decision `prepared` made, given what its call got: a reply, or the error that stood in its place.
  /// A failure answers by the failure policy (or, under FailurePolicy::throw_error, is thrown).
  MultiDecision settle(Prepared& prepared, ScriptReply reply) {
    const auto& keys = prepared.keys_;
    const auto& costs = prepared.costs_;
    try {
      if (prepared.failure_) std::rethrow_exception(prepared.failure_);
      if (reply.error) std::rethrow_exception(reply.error);
      MultiDecision result =
          prepared.listed_ ? std::move(*prepared.listed_) : decodeReply(*reply.reply, prepared.limits_);
      detail::enforce(options_.enforcement, result.decision);
      prepared.observation_.report(keys[result.binding], costs[result.binding], &result.decision, nullptr,
                                   result.binding_name);
      return result;
    } catch (const Error&) {
      const std::exception_ptr cause = std::current_exception();
      if (refusesToAnswer(cause)) {
        prepared.observation_.report(keys[0], costs[0], nullptr, cause);
        throw;
      }
      MultiDecision result = failurePolicyAnswers(costs.data(), cause, prepared.limits_);
      detail::enforce(options_.enforcement, result.decision);
      prepared.observation_.report(keys[result.binding], costs[result.binding], &result.decision, cause,
                                   result.binding_name);
      return result;
    }
  }

  /// The decision without the observer, the failure policy and the access list: throws what Redis failed with.
  MultiDecision decide(const std::vector<std::string_view>& keys, std::int64_t cost,
                       const std::vector<Limit>& limits = {}) {
    return decide(keys, sameCostForEveryRule(cost), limits);
  }

  /// The same with a cost per rule, costs[i] for rule i.
  MultiDecision decide(const std::vector<std::string_view>& keys, const std::vector<std::int64_t>& costs,
                       const std::vector<Limit>& limits = {}) {
    validate(keys, costs, limits);
    const detail::MultiWindowCall text = callText(keys, costs, limits);
    return decodeReply(*redis_->run(text.call(scriptFor(text))), limits);
  }

  /// The most holds in force at once on one rule's key (reserve()).
  static constexpr std::int64_t kMaxHolds = detail::kMaxHolds;

  /// Makes reservations possible (reserve(), commit()): from now on every decision of this limiter first
  /// releases the holds of its logs that ran out, so what it counts is what is spent and held. Its calls
  /// then run the holds' script, never the swl-native module's command. Call it before the limiter is
  /// shared; every limiter deciding the same keys must keep holds too.
  void keepHolds() noexcept { holds_ = true; }

  /// Reserves `cost` units of every rule (all logs) for `hold_for` (1 ms up to the shortest window), as
  /// tryAcquire would admit them: recorded now, all or nothing, and held until commit() or until
  /// `hold_for` passes on Redis's clock, when they are released (their entries keep no units). A check
  /// counts what is held. At most kMaxHolds are in force at once on a rule's key; one more is refused
  /// until the first ends (MultiReservation::holds_full). Redis's failures are thrown, as decide() throws
  /// them: a reservation never answers by the failure policy.
  MultiReservation reserve(const std::vector<std::string_view>& keys, std::int64_t cost,
                           std::chrono::microseconds hold_for, const std::vector<Limit>& limits = {}) {
    validate(keys, cost, limits);
    checkHolds("reserve", limits);
    const std::chrono::microseconds shortest = shortestWindow(limits);
    if (hold_for < std::chrono::milliseconds(1) || hold_for > shortest) {
      throw InvalidArgument("swl::MultiLimiter::reserve: a hold of " + std::to_string(hold_for.count()) +
                            " us is not in 1 ms.." + std::to_string(shortest.count()) +
                            " us (the shortest window: a hold ends with its entry)");
    }
    detail::MultiWindowCall text = callText(keys, sameCostForEveryRule(cost), limits);
    text.operation = "reserve";
    text.operands = {std::string(detail::IntegerText(hold_for.count())), detail::holdIdOf(cost, text.member)};
    const Reply reply = redis_->run(text.call(holdsScript()));
    std::int64_t full = 0;
    MultiReservation reserved{decodeReply(*reply, limits, 1, &full), {}, std::nullopt};
    if (full < 0 || full > static_cast<std::int64_t>(rules_.size()) || (full != 0 && reserved)) {
      throw detail::badReply("a reservation's full rule = " + std::to_string(full));
    }
    if (full != 0) reserved.holds_full = static_cast<std::size_t>(full - 1);
    if (reserved) reserved.id = std::move(text.operands[1]);
    return reserved;
  }

  /// Commits the reservation `id` (reserve()'s) on the same keys: `actual` units were spent (0..2^53).
  /// While its hold is in force, each rule's entry now holds `actual` at the reservation's time (more
  /// than reserved is charged past the limit if need be: the units were spent) and the hold is released.
  /// A reservation committed before changes nothing. One unknown, or whose hold ran out, is charged
  /// `actual` units now, as Recording::always charges them, and remembered: a repeated commit charges
  /// nothing. A bad id is an InvalidArgument. Redis's failures are thrown.
  MultiCommit commit(const std::vector<std::string_view>& keys, std::string_view id, std::int64_t actual,
                     const std::vector<Limit>& limits = {}) {
    validate(keys, 1, limits);
    checkHolds("commit", limits);
    if (!detail::isHoldId(id)) {
      throw InvalidArgument("swl::MultiLimiter::commit: " + detail::quoted(id) +
                            " is not a reservation id (units, ':' and a member)");
    }
    if (actual < 0 || actual >= detail::kLargestExact) {
      throw InvalidArgument("swl::MultiLimiter::commit: " + std::to_string(actual) +
                            " units spent; a commit takes 0 up to 2^53");
    }
    detail::MultiWindowCall text = callText(keys, sameCostForEveryRule(1), limits, Recording::always);
    text.operation = "commit";
    text.operands = {std::string(id), std::string(detail::IntegerText(actual))};
    const Reply reply = redis_->run(text.call(holdsScript()));
    const ReplyView& view = *reply;
    if (!view.isArray() || view.size() == 0 || !view[0].isInteger() || view[0].integer() < 1 || view[0].integer() > 3) {
      throw detail::badReply("something other than a commit's outcome");
    }
    MultiCommit committed{static_cast<Commitment>(view[0].integer() - 1), std::nullopt};
    if (committed.outcome == Commitment::charged && actual > 0) {
      std::vector<Limit> charged;
      for (std::size_t i = 0; i < rules_.size(); ++i) {
        charged.push_back(limitOf(i, limits));
        charged.back().max_requests = std::max(charged.back().max_requests, actual);
      }
      std::int64_t outcome = 0;
      committed.charge = decodeReply(*reply, charged, 1, &outcome);
    } else if (view.size() != 1) {
      throw detail::badReply("a commit's outcome followed by a decision it did not make");
    }
    return committed;
  }

  /// The holds' script, whole (for swl_scripts and SCRIPT LOAD ahead of time).
  static const Script& holdsScript() {
    static const std::string text = detail::scriptText<SlidingWindowLog>(std::string(detail::kPeriodFunctions)
                                                                             .append(Gcra::kFunctions)
                                                                             .append(detail::kHoldsOpeningText)
                                                                             .append(detail::kHoldsNumbers.view())
                                                                             .append(detail::kHoldsPreamble)
                                                                             .append(detail::kMultiWindowScript)
                                                                             .append(detail::kHoldsClosing),
                                                                         false, detail::kMultiWindowArguments);
    static const Script holds("multi_window_holds", text);
    return holds;
  }

  /// Throws what tryAcquire would for bad input: a key or a limit per rule, each request one rule could take.
  void validate(const std::vector<std::string_view>& keys, std::int64_t cost,
                const std::vector<Limit>& limits = {}) const {
    validate(keys, sameCostForEveryRule(cost), limits);
  }

  /// The same with a cost per rule: one per rule, each 1..its rule's limit (a message names the rule).
  void validate(const std::vector<std::string_view>& keys, const std::vector<std::int64_t>& costs,
                const std::vector<Limit>& limits = {}) const {
    if (keys.size() != rules_.size()) {
      throw InvalidArgument("swl::MultiLimiter::tryAcquire: " + std::to_string(keys.size()) + " keys for " +
                            std::to_string(rules_.size()) + " rules; give one key per rule, in the rules' order");
    }
    if (costs.size() != rules_.size()) {
      throw InvalidArgument("swl::MultiLimiter::tryAcquire: " + std::to_string(costs.size()) + " costs for " +
                            std::to_string(rules_.size()) +
                            " rules; give one cost per rule, in the rules' order, or one cost for every rule");
    }
    if (!limits.empty() && limits.size() != rules_.size()) {
      throw InvalidArgument("swl::MultiLimiter::tryAcquire: " + std::to_string(limits.size()) + " limits for " +
                            std::to_string(rules_.size()) + " rules; give one limit per rule, or none");
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const Limit& limit = limitOf(i, limits);
      if (limit != rules_[i].limit) {
        checkedRuleLimit(limit, rules_[i].algorithm, names_[i]);
        if (rules_[i].bounds && limit.window != rules_[i].limit.window) {
          throw InvalidArgument("swl::MultiLimiter::tryAcquire: a limit per call for the periodic rule " +
                                detail::quoted(names_[i]) + " changes only its quota, but its window of " +
                                std::to_string(limit.window.count()) + " us is not the periods' own (" +
                                std::to_string(rules_[i].limit.window.count()) + " us, " +
                                detail::quoted(rules_[i].bounds->periods().name()) + ")");
        }
      }
      detail::checkRequest("swl::MultiLimiter", "tryAcquire", keys[i], costs[i], limit.max_requests, names_[i]);
    }
  }

  /// The rules' names, in the limiter's order (the order of keys and limits in every call).
  const std::vector<std::string>& ruleNames() const noexcept { return names_; }
  /// Rule `rule`'s own limit.
  const Limit& limit(std::size_t rule) const { return rules_.at(rule).limit; }
  /// The Redis key rule `rule` keeps `key`'s state in (a log, a period's count, a GCRA time), for operators
  /// and tests.
  std::string redisKey(std::size_t rule, std::string_view key) const { return rules_.at(rule).keys.key(key); }

  /// The multi-window script, whole (for swl_scripts and SCRIPT LOAD ahead of time).
  static const Script& script() {
    static const std::string text = detail::scriptText<SlidingWindowLog>(
        std::string(detail::kPeriodFunctions).append(Gcra::kFunctions).append(detail::kMultiWindowScript), false,
        detail::kMultiWindowArguments);
    static const Script multi_window("multi_window", text);
    return multi_window;
  }

 private:
  struct RuleState {
    Limit limit;
    KeyPolicy keys;
    std::shared_ptr<const detail::PeriodBounds> bounds;  // a periodic rule's periods; none for a log or GCRA
    RuleAlgorithm algorithm;
  };

  // The same script as a call whose rules are all logs goes: a server with the swl-native module decides
  // it with SWL.DECIDEALL instead (docs/operations.md), one that lacks it with this script.
  static const Script& everyRuleALogScript() {
    static const Script every_rule_a_log(script().name(), script().text(), detail::kEveryRuleALogCommand,
                                         Script::NativeKeys::counted);
    return every_rule_a_log;
  }

  // The script `text`'s call names: the holds' for a call on holds; the one the module can stand in for
  // when every rule is a log.
  static const Script& scriptFor(const detail::MultiWindowCall& text) {
    if (!text.operation.empty()) return holdsScript();
    return text.everyRuleALog() ? everyRuleALogScript() : script();
  }

  // Reservations need holds kept (keepHolds()) and logs alone: a count per period or a bucket holds nothing.
  void checkHolds(const char* method, const std::vector<Limit>& /*limits*/) const {
    if (!holds_) {
      throw InvalidArgument(std::string("swl::MultiLimiter::") + method +
                            ": this limiter keeps no holds; call keepHolds() before it decides");
    }
    for (std::size_t i = 0; i < rules_.size(); ++i) {
      if (rules_[i].algorithm != RuleAlgorithm::sliding_window_log || rules_[i].bounds) {
        throw InvalidArgument(std::string("swl::MultiLimiter::") + method + ": the rule " + detail::quoted(names_[i]) +
                              " is not a sliding window log, and only a log holds units");
      }
    }
  }

  // The shortest window of a call's rules.
  std::chrono::microseconds shortestWindow(const std::vector<Limit>& limits) const {
    std::chrono::microseconds shortest = limitOf(0, limits).window;
    for (std::size_t i = 1; i < rules_.size(); ++i) shortest = std::min(shortest, limitOf(i, limits).window);
    return shortest;
  }

  // The call of a decision whose input validate() accepted.
  detail::MultiWindowCall callText(const std::vector<std::string_view>& keys, const std::vector<std::int64_t>& costs,
                                   const std::vector<Limit>& limits, Recording recording = Recording::when_admitted) {
    detail::MultiWindowCall text{keys.size(),
                                 {},
                                 scriptNow(limits, recording != Recording::never),
                                 detail::checkedMember("swl::MultiLimiter", members_.next()),
                                 recordingArgument(recording),
                                 {},
                                 {},
                                 {},
                                 {},
                                 {}};
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const Limit& limit = limitOf(i, limits);
      text.redis_keys[i] = rules_[i].keys.key(keys[i]);
      text.rule_numbers[4 * i] = detail::IntegerText(costs[i]);
      text.rule_numbers[4 * i + 1] = detail::IntegerText(limit.window.count());
      text.rule_numbers[4 * i + 2] = detail::IntegerText(limit.max_requests);
      text.rule_numbers[4 * i + 3] = detail::IntegerText(ttl_.ttl(limit.window).count());
      if (rules_[i].algorithm == RuleAlgorithm::gcra) {
        text.counting[i] = detail::kGcraRule;
      } else if (rules_[i].bounds) {
        text.counting[i] = rules_[i].bounds->textFor(text.now.clientNow());
      }
      if (holds_) text.holds_keys[i] = detail::holdsKeyOf(text.redis_keys[i]);
    }
    if (holds_) text.operation = "decide";
    return text;
  }

  // What the script's ARGV[3] says of recording (kMultiWindowArguments).
  std::string_view recordingArgument(Recording recording) const {
    if (recording == Recording::never) return "-";
    return recording == Recording::always || options_.rejected == RejectedRequests::counted ? "1" : "0";
  }

  // Whether `failure` is thrown to the caller rather than answered by the failure policy: bad input
  // always is, and every failure under FailurePolicy::throw_error.
  bool refusesToAnswer(const std::exception_ptr& failure) const {
    return options_.on_failure == FailurePolicy::throw_error || detail::holdsError<InvalidArgument>(failure);
  }

  // One call's costs when every rule is charged `cost`: the one-cost calls are the per-rule calls.
  std::vector<std::int64_t> sameCostForEveryRule(std::int64_t cost) const {
    return std::vector<std::int64_t>(rules_.size(), cost);
  }

  // Rule i's limit in a call given `limits` (empty: the rules' own).
  const Limit& limitOf(std::size_t i, const std::vector<Limit>& limits) const {
    return limits.empty() ? rules_[i].limit : limits[i];
  }

  // `limit` if rule `name`, counting by `algorithm`, can keep it (GCRA counts limit x window exactly only
  // below 2^53), and the TTL policy lasts its window.
  Limit checkedRuleLimit(const Limit& limit, RuleAlgorithm algorithm, std::string_view name) const {
    detail::checkedTtl(ttl_, detail::checkedLimit(limit).window, "swl::MultiLimiter");
    if (algorithm == RuleAlgorithm::gcra) {
      Gcra::check(limit, "swl::MultiLimiter: the gcra rule " + detail::quoted(name));
    }
    return limit;
  }

  // Now as the script takes it, past every rule's window.
  // A call that records carries its deadline under FailurePolicy::deny (see LimiterCalls::expiring).
  detail::ScriptNow scriptNow(const std::vector<Limit>& limits, bool records) const {
    std::chrono::microseconds longest{0};
    for (std::size_t i = 0; i < rules_.size(); ++i) longest = std::max(longest, limitOf(i, limits).window);
    return detail::ScriptNow(options_.clock, longest, records && options_.on_failure == FailurePolicy::deny);
  }

  // A reply's decision; `skip` integers before it go to `skipped` (a call on holds says something first).
  MultiDecision decodeReply(ReplyView reply, const std::vector<Limit>& limits, std::size_t skip = 0,
                            std::int64_t* skipped = nullptr) const {
    std::array<std::int64_t, kMaxRules> maxima;
    for (std::size_t i = 0; i < rules_.size(); ++i) maxima[i] = limitOf(i, limits).max_requests;
    MultiDecision result;
    result.rules = detail::decodeRuleDecisions<kMaxRules>(reply, maxima.data(), rules_.size(), skip, skipped);
    return pickBindingRule(std::move(result));
  }

  // Picks the binding rule and copies its numbers into the overall decision.
  MultiDecision pickBindingRule(MultiDecision result) const {
    const auto& rules = result.rules;
    const bool admitted = std::all_of(rules.begin(), rules.end(), [](const Decision& d) { return d.allowed; });
    const auto binding =
        admitted ? std::min_element(rules.begin(), rules.end(),
                                    [](const Decision& a, const Decision& b) { return a.remaining < b.remaining; })
                 : std::max_element(rules.begin(), rules.end(),
                                    [](const Decision& a, const Decision& b) { return a.retry_after < b.retry_after; });
    result.binding = static_cast<std::size_t>(binding - rules.begin());
    result.binding_name = names_[result.binding];
    result.decision = *binding;
    result.decision.allowed = admitted;
    return result;
  }

  // The access list's answer for the whole call, if it gives one: a rule's key denied refuses the call,
  // and otherwise a rule's key allowed admits it untouched (no rule counts it). Every rule answers alike,
  // and the key that decided binds. The call's input is valid (validate()).
  std::optional<MultiDecision> accessListAnswers(const std::vector<std::string_view>& keys,
                                                 const std::vector<Limit>& limits) const {
    const AccessList* access = options_.access.get();
    if (access == nullptr) return std::nullopt;
    std::optional<std::size_t> first_allowed, first_denied;
    for (std::size_t i = 0; i < keys.size() && !first_denied; ++i) {
      const Listing listing = access->listingOf(keys[i]);
      if (listing == Listing::denied) first_denied = i;
      if (listing == Listing::allowed && !first_allowed) first_allowed = i;
    }
    const std::optional<std::size_t> deciding = first_denied ? first_denied : first_allowed;
    if (!deciding) return std::nullopt;
    const Listing listing = first_denied ? Listing::denied : Listing::allowed;
    MultiDecision result;
    for (std::size_t i = 0; i < rules_.size(); ++i)
      result.rules.push_back(detail::accessListAnswer(listing, limitOf(i, limits)));
    result.binding = *deciding;
    result.binding_name = names_[*deciding];
    result.decision = result.rules[*deciding];
    return result;
  }

  // Redis could not decide: every rule answers with the failure policy, for its own cost.
  MultiDecision failurePolicyAnswers(const std::int64_t* costs, const std::exception_ptr& error,
                                     const std::vector<Limit>& limits) const {
    MultiDecision result;
    for (std::size_t i = 0; i < rules_.size(); ++i) {
      result.rules.push_back(
          detail::failurePolicyAnswer(options_.on_failure, limitOf(i, limits), costs[i], error).decision);
    }
    return pickBindingRule(std::move(result));
  }

  RedisClient* redis_;
  LimiterOptions options_;
  std::vector<std::string> names_;
  std::vector<RuleState> rules_;
  MemberPolicy members_;
  TtlPolicy ttl_;
  bool holds_ = false;  // keepHolds()
};

}  // namespace swl
