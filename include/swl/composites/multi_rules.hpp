#pragma once
/// \file
/// The values a MultiLimiter (composites/multi_limiter.hpp) is made of and answers with: its rules, each a
/// log, a token bucket or a quota per period, and its decision of all of them.

#include <swl/decision.hpp>
#include <swl/periods.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

/// How a MultiLimiter rule without periods counts (a rule with periods counts per period).
enum class RuleAlgorithm {
  sliding_window_log,  ///< the exact sliding window log (algorithms/sliding_window_log.hpp): the default
  gcra,                ///< a token bucket (algorithms/gcra.hpp), made by Rule::gcra
};

/// One limit of a MultiLimiter; the name goes into its Redis keys and names it in decisions. A rule is a
/// sliding window log; a token bucket, made by Rule::gcra; or, given periods (periods.hpp; calendar days
/// in a time zone: calendar.hpp), a quota per period, whose limit is {quota, the periods' usual length}.
struct Rule {
  /// What names the rule in its Redis keys and in decisions: not empty, no braces.
  std::string name;
  /// The rule's limit; for a quota per period, {quota, the periods' usual length}.
  Limit limit;
  /// The periods of a quota per period; none for a sliding window log or a token bucket.
  std::optional<Periods> periods;
  /// How the rule counts when it has no periods.
  RuleAlgorithm algorithm = RuleAlgorithm::sliding_window_log;

  /// A sliding window log of `rule_limit`.
  Rule(std::string rule_name, Limit rule_limit) : name(std::move(rule_name)), limit(rule_limit) {}
  /// A quota per period: `quota` units in each of `rule_periods`.
  Rule(std::string rule_name, std::int64_t quota, Periods rule_periods)
      : name(std::move(rule_name)), limit{quota, rule_periods.usualLength()}, periods(std::move(rule_periods)) {}

  /// A token bucket decided as GcraLimiter decides it (the same key, the same answers): a burst of
  /// `bucket.max_requests`, then one unit back every window/max_requests. Needs max_requests x window
  /// (in microseconds) below 2^53, per-call limits too.
  static Rule gcra(std::string rule_name, Limit bucket) {
    Rule rule(std::move(rule_name), bucket);
    rule.algorithm = RuleAlgorithm::gcra;
    return rule;
  }
};

/// Whether a MultiLimiter's prepared decision records the request: as tryAcquire does, when every rule
/// admits it; or never, a dry run: tryAcquire's answer with nothing recorded, each rule's remaining as it
/// stands (swl-ratelimit's answer for the other descriptors of a request that one never fits).
enum class Recording {
  when_admitted,  ///< tryAcquire's
  never,          ///< a dry run: nothing recorded, and no event for the observer
  always,         ///< a charge for units already spent: recorded in every rule whether or not it fits, as a
                  ///< counted refusal is (RejectedRequests::counted), so a window can hold more than its
                  ///< limit until the charge slides out; the decision still says whether it fitted
};

/// A MultiLimiter's answer: the decision to act on, and each rule's own.
struct MultiDecision {
  /// What to act on: allowed iff every rule admitted; the limit, remaining and times of the binding rule.
  Decision decision;
  /// The binding rule: when refused, the refusing rule with the longest retry_after (so waiting that
  /// long satisfies every rule); when admitted, the rule with the least remaining.
  std::size_t binding = 0;
  std::string_view binding_name;  ///< valid while the limiter lives
  /// Each rule's own decision, in the limiter's order.
  std::vector<Decision> rules;

  /// Admitted: by every rule.
  explicit operator bool() const noexcept { return decision.allowed; }
};

/// What MultiLimiter::reserve came to: the decision, and the reservation's id when admitted.
struct MultiReservation {
  /// Whether the units fitted every rule, and each rule's own decision, as tryAcquire answers.
  MultiDecision decision;
  /// What commit() takes (a plain value: another thread or process may commit it); empty when refused.
  std::string id;
  /// The rule whose holds were all taken (MultiLimiter::kMaxHolds in force at once), which refused the
  /// reservation until its first hold ends; none otherwise.
  std::optional<std::size_t> holds_full;

  /// Reserved: every rule holds the units.
  explicit operator bool() const noexcept { return decision.decision.allowed; }
};

/// What MultiLimiter::commit did.
enum class Commitment {
  released,          ///< the hold was in force: each rule's entry now holds the actual units
  committed_before,  ///< the reservation was committed already: nothing changed
  charged,           ///< unknown, or its hold had run out: the actual units charged as spent units are
};

/// What MultiLimiter::commit came to.
struct MultiCommit {
  Commitment outcome = Commitment::released;  ///< what it did
  /// For a charge of units (not 0): whether they fitted, each rule judging them under the larger of its
  /// limit and the units.
  std::optional<MultiDecision> charge;
};

}  // namespace swl
