#pragma once
/// \file
/// What swl-ratelimit answers Envoy: a RateLimitRequest's descriptors found in the configuration and
/// decided together, all or nothing, in one EVALSHA (swl::MultiLimiter): no descriptor counts a request
/// that another refused, unlike envoyproxy/ratelimit, which counts every hit.
///
/// A request's plan (plan.hpp) says what each descriptor costs and where it is counted. A descriptor
/// that repeats another's counter in the same request shares its decision and counts once. A shadow-mode
/// rule that refuses is reported OK and records nothing, and the others are decided again without it. A
/// descriptor whose cost is more than its whole limit refuses the request without asking Redis, and the
/// others are answered as they stand, counting nothing (a dry run).
///
/// Redis's failures answer by the failure policy (open by default, as Envoy's filter expects).

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/rule.hpp>
#include <ratelimit/decide/asked.hpp>
#include <ratelimit/decide/limiters.hpp>
#include <ratelimit/decide/options.hpp>
#include <ratelimit/decide/plan.hpp>
#include <ratelimit/decide/reservations.hpp>

#include <swl/composites/multi_limiter.hpp>
#include <swl/redis/client.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::ratelimit {

class Decider {
 public:
  /// Decides over `redis` (a pool, a cluster, a Sentinel-watched client), which must outlive it, and
  /// tells `observers` what each decision came to.
  Decider(RedisClient& redis, DeciderOptions options, DecisionObservers observers = {})
      : redis_(&redis),
        options_(std::move(options)),
        observers_(std::move(observers)),
        limiters_(redis, options_, observers_.observer) {}

  /// The MultiLimiters it decides with: Kuadrant's reservations (reservations.hpp) are made on them too.
  ServiceLimiters& limiters() noexcept { return limiters_; }

  /// Finds `request`'s descriptors in `config`: no Redis, no waiting. A request out of bounds throws
  /// InvalidArgument (plan.hpp).
  Plan plan(const Configuration& config, const rls::RateLimitRequest& request,
            Asking asking = Asking::should_rate_limit) const {
    try {
      Plan planned(config, request, options_, asking);
      // Only a plan that limits nothing can be of an unknown domain: the lookup stays off the others' path.
      if (observers_.on_unknown_domain && !planned.asksRedis() && config.domains().count(request.domain()) == 0) {
        observers_.on_unknown_domain(request.domain(), static_cast<std::size_t>(request.descriptors_size()));
      }
      return planned;
    } catch (const InvalidArgument&) {
      if (observers_.on_call_error) observers_.on_call_error(CallError::service);
      throw;
    }
  }

  /// What deciding one plan came to: Envoy's answer, or what deciding it threw (an InvalidArgument for a
  /// request of more limited descriptors than one decision takes, MultiLimiter<GivenKey>::kMaxRules).
  struct Answer {
    rls::RateLimitResponse response;
    std::exception_ptr error;
  };

  /// Decides each of `plans` (its limited descriptors together, all or nothing) and answers each, in
  /// order. The plans that wait together are decided together: each round of decisions is one pipelined
  /// round trip to Redis for every plan in it (RedisClient::runMany), so a thread wakes once for all of
  /// their replies, and Redis reads their calls at once. Redis decides a round's plans in their order; a
  /// plan decided again without the refusals that do not refuse it (shadow and quota rules', or every
  /// rule's under SHADOW_MODE) is decided after the round before it, so after plans that came later. Its
  /// request was in flight with theirs, and either order is exact.
  std::vector<Answer> decideMany(std::vector<Plan> plans) {
    std::vector<Deciding> deciding;
    deciding.reserve(plans.size());  // each stays in place while its call is in use
    for (Plan& plan : plans) deciding.emplace_back(plan);
    std::vector<std::string> reserved = reserveFirst(deciding);
    while (decideRound(deciding)) {
    }
    for (std::size_t i = 0; i < plans.size(); ++i) keepOrRelease(plans[i], reserved[i]);
    std::vector<Answer> answers(plans.size());
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (deciding[i].error) {
        answers[i].error = deciding[i].error;
        reportError(deciding[i].error);
        continue;
      }
      deciding[i].shareRepeatedDecisions();
      if (observers_.on_descriptor || observers_.on_call_error) report(plans[i]);
      answers[i].response = std::move(plans[i]).answer();
    }
    return answers;
  }

  /// decideMany of one plan: its answer, or what deciding it threw.
  rls::RateLimitResponse decide(Plan plan) {
    std::vector<Plan> one;
    one.push_back(std::move(plan));
    Answer answer = std::move(decideMany(std::move(one)).front());
    if (answer.error) std::rethrow_exception(answer.error);
    return std::move(answer.response);
  }

  /// The answer to `request` under `config`: plan(), then decide().
  rls::RateLimitResponse decide(const Configuration& config, const rls::RateLimitRequest& request) {
    return decide(plan(config, request));
  }

 private:
  // One plan on its way through Redis: the limited descriptors it still decides together, and those it
  // only checks (hits_addend 0). While its refusals do not refuse the request (Plan::refused: a shadow
  // or quota rule's, or any under SHADOW_MODE), it decides again without them: they record nothing, as
  // swl's shadow mode records nothing for a refusal, and the request, served, is counted by the rest.
  struct Deciding {
    explicit Deciding(Plan& planned) : plan(&planned) {
      for (LimitedDescriptor& each : plan->limited()) {
        if (each.hold_for.count() > 0 || !each.reservation.empty()) continue;  // reserveFirst's
        if (each.charge && each.limit.max_requests > 0) {
          addOnce(each, charges);
          continue;
        }
        if (each.checks_only) {
          if (each.limit.max_requests == 0) {
            each.decision = each.peek ? neverFits(each) : checkedEmpty(each);
          } else {
            checked.push_back(&each);
          }
          continue;
        }
        if (each.hits > each.limit.max_requests) {
          each.decision = neverFits(each);  // the whole limit (0 included) could not hold it
        } else {
          addOnce(each, open);
        }
      }
      const std::size_t most = std::max({open.size(), checked.size(), charges.size()});
      if (most > MultiLimiter<GivenKey>::kMaxRules) {
        error = std::make_exception_ptr(InvalidArgument("swl-ratelimit: " + std::to_string(most) +
                                                        " limited descriptors in one request; one decision takes at "
                                                        "most " +
                                                        std::to_string(MultiLimiter<GivenKey>::kMaxRules)));
      }
    }

    // `each` joins `list`, unless a descriptor of `list` has its counter: it then shares that decision.
    void addOnce(LimitedDescriptor& each, std::vector<LimitedDescriptor*>& list) {
      const auto same = std::find_if(
          list.begin(), list.end(), [&](const LimitedDescriptor* other) { return other->redis_key == each.redis_key; });
      if (same != list.end()) {
        repeats.emplace_back(&each, *same);
      } else {
        list.push_back(&each);
      }
    }

    bool decidesAgain() const { return !error && (!open.empty() || !checked.empty() || !charges.empty()); }

    // Makes the round's calls, each on the MultiLimiter of its descriptors' ways of counting (`limiterFor`):
    // the open descriptors', the checked ones' (a dry run of 1 hit each, under one more than the limit:
    // a check is refused only past the limit) and the charges' (recorded whatever they find).
    template <class LimiterFor>
    void prepare(LimiterFor&& limiterFor) {
      // A request refused already (a descriptor it never fits) is answered as it stands, counting nothing.
      if (!open.empty()) {
        counted.emplace(prepareOn(limiterFor(open), open, Asked::hits,
                                  plan->refused() ? Recording::never : Recording::when_admitted));
      }
      if (!checked.empty()) check.emplace(prepareOn(limiterFor(checked), checked, Asked::check, Recording::never));
      if (!charges.empty()) charge.emplace(prepareOn(limiterFor(charges), charges, Asked::charge, Recording::always));
    }

    // Takes the round's decisions: done once nothing is left to decide again.
    void settle(ScriptReply counted_reply, ScriptReply checked_reply, ScriptReply charged_reply) {
      if (charge) {  // recorded: decided once, whatever they got
        const MultiDecision decided = charge->limiter->settle(charge->prepared, std::move(charged_reply));
        charge.reset();
        for (std::size_t i = 0; i < charges.size(); ++i)
          charges[i]->decision = chargedUnder(*charges[i], decided.rules[i]);
        charges.clear();
      }
      if (counted) {
        const MultiDecision decided = counted->limiter->settle(counted->prepared, std::move(counted_reply));
        counted.reset();
        for (std::size_t i = 0; i < open.size(); ++i) open[i]->decision = decided.rules[i];
        if (decided.decision.allowed || plan->refused()) {
          open.clear();
        } else {
          open.erase(std::remove_if(open.begin(), open.end(),
                                    [](const LimitedDescriptor* each) { return !each->decision->allowed; }),
                     open.end());
        }
      }
      if (check) {
        const MultiDecision decided = check->limiter->settle(check->prepared, std::move(checked_reply));
        check.reset();
        for (std::size_t i = 0; i < checked.size(); ++i) {
          checked[i]->decision = checkedUnder(*checked[i], decided.rules[i]);
        }
        checked.clear();
      }
    }

    // The same counter twice in one request (two of Envoy's actions making one descriptor) was decided
    // once: one script must not record one request twice in one log.
    void shareRepeatedDecisions() {
      for (const auto& [repeat, decided] : repeats) repeat->decision = decided->decision;
    }

    // One MultiLimiter call under way: the limiter that made it, to settle it.
    struct Call {
      MultiLimiter<GivenKey>* limiter;
      MultiLimiter<GivenKey>::Prepared prepared;
    };

    static Call prepareOn(MultiLimiter<GivenKey>& limiter, const std::vector<LimitedDescriptor*>& descriptors,
                          Asked asked, Recording recording) {
      std::vector<std::string_view> keys;  // views of the plan's own keys, which outlive the round
      std::vector<std::int64_t> costs;
      std::vector<Limit> limits;
      for (const LimitedDescriptor* each : descriptors) {
        keys.push_back(each->redis_key);
        const AskedOf call = askedOf(*each, asked);
        costs.push_back(call.cost);
        limits.push_back(call.limit);
      }
      return {&limiter, limiter.prepare(keys, costs, limits, recording)};
    }

    Plan* plan;
    std::vector<LimitedDescriptor*> open;
    std::vector<LimitedDescriptor*> checked;
    std::vector<LimitedDescriptor*> charges;
    std::vector<std::pair<LimitedDescriptor*, const LimitedDescriptor*>> repeats;
    std::exception_ptr error;
    std::optional<Call> counted, check, charge;
  };

  // Reservations through Envoy's calls (reservation_entries.hpp), made before the rounds: a refused
  // one refuses its request, whose other descriptors then record nothing. Each plan's reservation id.
  std::vector<std::string> reserveFirst(std::vector<Deciding>& deciding) {
    std::vector<std::string> reserved(deciding.size());
    if (!options_.reservations) return reserved;
    for (std::size_t i = 0; i < deciding.size(); ++i) {
      if (deciding[i].error) continue;
      try {
        reserved[i] = reserveAndCommit(limiters_, *deciding[i].plan, options_.on_failure);
      } catch (const Error&) {
        deciding[i].error = std::current_exception();
      }
    }
    return reserved;
  }

  // A plan's reservation goes back to Envoy, or, when another descriptor refused the request, is
  // released: the request is not served.
  void keepOrRelease(Plan& plan, const std::string& id) {
    if (id.empty()) return;
    if (!plan.refused()) return plan.reserved(id);
    std::vector<LimitedDescriptor*> reserving;
    for (LimitedDescriptor& each : plan.limited()) {
      if (each.hold_for.count() > 0) reserving.push_back(&each);
    }
    try {
      commit(limiters_, reserving, id, 0);
    } catch (const Error&) {  // its hold runs out by itself
    }
  }

  // Decides one round of every plan still deciding, in one runMany; false when none was.
  bool decideRound(std::vector<Deciding>& deciding) {
    std::vector<Deciding*> asking;
    std::vector<ScriptCall> calls;
    for (Deciding& each : deciding) {
      if (!each.decidesAgain()) continue;
      try {
        each.prepare([this](const std::vector<LimitedDescriptor*>& descriptors) -> MultiLimiter<GivenKey>& {
          return limiters_.limiterFor(descriptors);
        });
      } catch (const Error&) {
        each.error = std::current_exception();
        continue;
      }
      asking.push_back(&each);
      for (const std::optional<Deciding::Call>* made : {&each.counted, &each.check, &each.charge}) {
        if (*made) {
          if (const std::optional<ScriptCall> call = (*made)->prepared.call()) calls.push_back(*call);
        }
      }
    }
    if (asking.empty()) return false;
    std::vector<ScriptReply> replies = runMany(calls);
    std::size_t next_reply = 0;
    const auto replyOf = [&](const std::optional<Deciding::Call>& made) {
      ScriptReply reply;
      if (made && made->prepared.call()) reply = std::move(replies[next_reply++]);
      return reply;
    };
    for (Deciding* each : asking) {
      ScriptReply counted = replyOf(each->counted);
      ScriptReply checked = replyOf(each->check);
      ScriptReply charged = replyOf(each->charge);
      try {
        each->settle(std::move(counted), std::move(checked), std::move(charged));
      } catch (const Error&) {  // Redis failed, and the failure policy says to say so
        each->error = std::current_exception();
      }
    }
    return true;
  }

  // Every call's reply; a client that could not send them (no connection to borrow) fails each.
  std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) {
    if (calls.empty()) return {};
    try {
      return redis_->runMany(calls);
    } catch (const Error&) {
      std::vector<ScriptReply> failed(calls.size());
      for (ScriptReply& each : failed) each.error = std::current_exception();
      return failed;
    }
  }

  // Tells the observers what each decided descriptor got, and whether Redis failed the call.
  void report(Plan& plan) const {
    bool redis_failed = false;
    const bool refused = plan.refused();  // then nothing was recorded, for any descriptor
    for (const LimitedDescriptor& each : plan.limited()) {
      if (!each.decision) continue;
      const Decision& decision = *each.decision;
      redis_failed = redis_failed || decision.tier != Tier::redis;
      if (!observers_.on_descriptor) continue;
      DescriptorReport report;
      report.stats_key = each.rule != nullptr ? std::string_view(each.rule->stats_key) : std::string_view(each.policy);
      report.overridden = each.rule == nullptr;
      report.outcome = decision.tier != Tier::redis ? DescriptorOutcome::failure_policy
                       : decision.allowed           ? DescriptorOutcome::ok
                       : each.shadow                ? DescriptorOutcome::shadow_over_limit
                                                    : DescriptorOutcome::over_limit;
      report.hits = each.hits;
      report.limit = each.limit.max_requests;
      // What the window holds as the decision left it; less the request's hits where they were recorded.
      const std::int64_t held = report.limit - std::clamp<std::int64_t>(decision.remaining, 0, report.limit);
      const bool recorded = decision.allowed && !refused && !each.checks_only;
      report.used_before = recorded ? std::max<std::int64_t>(0, held - each.hits) : held;
      observers_.on_descriptor(report);
    }
    if (redis_failed && observers_.on_call_error) observers_.on_call_error(CallError::redis);
  }

  // A request out of bounds is the service's error; anything else deciding threw, Redis's (the failure
  // policy said to say so).
  void reportError(const std::exception_ptr& error) const {
    if (!observers_.on_call_error) return;
    try {
      std::rethrow_exception(error);
    } catch (const InvalidArgument&) {
      observers_.on_call_error(CallError::service);
    } catch (...) {
      observers_.on_call_error(CallError::redis);
    }
  }

  RedisClient* redis_;
  DeciderOptions options_;
  DecisionObservers observers_;
  ServiceLimiters limiters_;
};

}  // namespace swl::ratelimit
