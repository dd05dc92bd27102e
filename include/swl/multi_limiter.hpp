#pragma once
// MultiLimiter: several limits in one decision, all or nothing (the seed articles' layered limits).
//
//   swl::MultiLimiter<> limiter(connection, {{"user-second", swl::Limit{10, 1s}},
//                                            {"user-hour", swl::Limit{1000, 1h}},
//                                            {"endpoint", swl::Limit{5000, 1s}}});
//   swl::MultiDecision d = limiter.tryAcquire({"user:42", "user:42", "GET /search"});
//   if (!d) reply429(d.decision.retry_after, "refused by " + d.binding_name);
//
// One key per rule, in the rules' order. One EVALSHA decides them all: the request is recorded in
// every rule's log only if every rule admits it, so a refusal costs no rule anything. Each rule is an
// exact sliding window log (sliding_window_script.hpp) under the Redis key KeyPolicy(prefix:name) makes
// of its key: "swl:user-second:user:42" with PrefixKey.
//
// On Redis Cluster the keys of one decision must share a hash slot: use HashTagKey
// ("swl:user-second:{user:42}") and keys with the same tag; a decision whose keys lie in different
// slots is refused with InvalidArgument before anything is sent.
//
// Thread safety: as safe as its RedisClient (see BasicLimiter).

#include <swl/detail/decision_reply.hpp>
#include <swl/detail/limiter_rules.hpp>
#include <swl/error.hpp>
#include <swl/key_policy.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/member_policy.hpp>
#include <swl/multi_window_script.hpp>
#include <swl/redis_client.hpp>
#include <swl/script.hpp>
#include <swl/sliding_window.hpp>
#include <swl/ttl_policy.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

// One limit of a MultiLimiter; the name goes into its Redis keys and names it in decisions.
struct Rule {
  std::string name;
  Limit limit;
};

struct MultiDecision {
  // What to act on: allowed iff every rule admitted; the limit, remaining and times of the binding rule.
  Decision decision;
  // The binding rule: when refused, the refusing rule with the longest retry_after (so waiting that
  // long satisfies every rule); when admitted, the rule with the least remaining.
  std::size_t binding = 0;
  std::string_view binding_name;  // valid while the limiter lives
  // Each rule's own decision, in the limiter's order.
  std::vector<Decision> rules;

  explicit operator bool() const noexcept { return decision.allowed; }
};

template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class MultiLimiter {
  static_assert(!detail::IsSharded<KeyPolicy>::value,
                "a MultiLimiter's keys must share a slot: they cannot be sharded");

 public:
  MultiLimiter(RedisClient& redis, std::vector<Rule> rules, LimiterOptions options = {}, std::string prefix = "swl",
               MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : redis_(&redis), names_(names(rules)), members_(std::move(members)) {
    if (rules.empty() || rules.size() > ScriptCall::kMaxKeys) {
      throw InvalidArgument("swl::MultiLimiter: " + std::to_string(rules.size()) + " rules; one decision takes 1 to " +
                            std::to_string(ScriptCall::kMaxKeys));
    }
    for (const Rule& rule : rules) {
      if (rule.name.empty() || rule.name.find_first_of("{}") != std::string::npos) {
        throw InvalidArgument("swl::MultiLimiter: the rule name '" + rule.name +
                              "' is empty or holds a brace, which would move its keys to another hash slot");
      }
      rules_.emplace_back(rule.limit, options, KeyPolicy(prefix + ":" + rule.name), detail::NoMember(), ttl);
    }
    const std::vector<std::string> sorted = sortedNames();
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      throw InvalidArgument("swl::MultiLimiter: two rules share a name, so they would share Redis keys");
    }
  }

  // keys[i] is the key rule i limits (the same user key for several rules is fine).
  MultiDecision tryAcquire(const std::vector<std::string_view>& keys, std::int64_t cost = 1) {
    if (keys.size() != rules_.size()) {
      throw InvalidArgument("swl::MultiLimiter::tryAcquire: " + std::to_string(keys.size()) + " keys for " +
                            std::to_string(rules_.size()) + " rules; give one key per rule, in the rules' order");
    }
    std::vector<std::string> redis_keys;
    redis_keys.reserve(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      rules_[i].validate(keys[i], cost);
      redis_keys.push_back(rules_[i].redisKey(keys[i]));
    }
    const std::string member = members_.next();
    const detail::IntegerText cost_text(cost);
    const detail::IntegerText now(rules_.front().now());
    const std::string_view now_text = options().clock.isRedisTime() ? std::string_view() : now.view();

    // The call's keys and arguments are views, so they go on the stack: at most 9 rules.
    std::array<std::string_view, ScriptCall::kMaxKeys> key_views;
    std::copy(redis_keys.begin(), redis_keys.end(), key_views.begin());
    std::array<std::string_view, 4 + 3 * ScriptCall::kMaxKeys> args{cost_text.view(), now_text, member,
                                                                    rules_.front().countRejectedText()};
    std::size_t arg_count = 4;
    for (const auto& rule : rules_) {
      for (const std::string_view arg : {rule.windowText(), rule.limitText(), rule.ttlText()}) args[arg_count++] = arg;
    }
    try {
      return decide(*redis_->run(ScriptCall(script(), key_views.data(), rules_.size(), args.data(), arg_count)));
    } catch (const Error&) {
      return failed(cost, std::current_exception());
    }
  }

  const std::vector<std::string>& ruleNames() const noexcept { return names_; }
  const Limit& limit(std::size_t rule) const { return rules_.at(rule).limit(); }
  std::string redisKey(std::size_t rule, std::string_view key) const { return rules_.at(rule).redisKey(key); }

  static const Script& script() {
    static const Script multi_window("multi_window", kMultiWindowScript);
    return multi_window;
  }

 private:
  using Rules = detail::LimiterRules<detail::SlidingWindowLog, KeyPolicy, detail::NoMember, TtlPolicy>;

  static std::vector<std::string> names(const std::vector<Rule>& rules) {
    std::vector<std::string> names;
    for (const Rule& rule : rules) names.push_back(rule.name);
    return names;
  }

  std::vector<std::string> sortedNames() const {
    std::vector<std::string> sorted = names_;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }

  const LimiterOptions& options() const { return rules_.front().options(); }

  MultiDecision decide(const redisReply& reply) const {
    std::array<std::int64_t, ScriptCall::kMaxKeys> limits;
    for (std::size_t i = 0; i < rules_.size(); ++i) limits[i] = rules_[i].limit().max_requests;
    MultiDecision result;
    result.rules = detail::decodeRuleDecisions<ScriptCall::kMaxKeys>(reply, limits.data(), rules_.size());
    return bound(std::move(result));
  }

  // Picks the binding rule and copies its numbers into the overall decision.
  MultiDecision bound(MultiDecision result) const {
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

  // Redis could not decide: every rule answers with the failure policy, or the error is thrown.
  MultiDecision failed(std::int64_t cost, std::exception_ptr error) const {
    MultiDecision result;
    for (const auto& rule : rules_) result.rules.push_back(rule.failed(cost, error).value());
    return bound(std::move(result));
  }

  RedisClient* redis_;
  std::vector<std::string> names_;
  std::vector<Rules> rules_;
  MemberPolicy members_;
};

}  // namespace swl
