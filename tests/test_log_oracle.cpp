// The log held to an exact in-memory model, answer by answer, on random traces with a manual clock:
// weighted costs, batches at one instant, counted refusals, reservations settled to nothing, to less
// and to more, leases and their give-backs, limits and windows changing per call, a clock stepping back,
// and MultiLimiter rules deciding over the same sets, each at a cost of its own. After the calls it names, check_log
// recomputes every sum of the sets they touched from their entries. The token-budget traces reach windows of more than
// 10^5 entries and every level of the sums. The GCRA traces put a token bucket (Rule::gcra) beside a log in a
// MultiLimiter, the bucket held to an exact model of its own and its key compared after every decision. Each case
// prints what it crossed and fails when a boundary it exists for was never reached.
//
// SWL_ORACLE_DECISIONS (CMake sets it per build) is how many decisions the cases make between them.

#include <swl/swl.hpp>

#include "support/log_model.hpp"
#include "support/manual_time.hpp"
#include "support/wanted.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

using namespace std::chrono_literals;
using swl::test::Expected;
using swl::test::ManualTime;
using swl::test::ModelLog;
using swl::test::Tally;

namespace {

using Micros = std::chrono::microseconds;
using Log = swl::SlidingWindowLimiter<swl::PrefixKey, swl::CompactMember, swl::FixedTtl>;
using Multi = swl::MultiLimiter<swl::PrefixKey, swl::CompactMember, swl::FixedTtl>;

// Keys outlive every trace here: expiry runs on Redis's own clock, which the manual clock does not move.
const swl::FixedTtl kLongTtl{std::chrono::hours(2)};

// Wide enough for an arrival time counted in 1/limit microseconds: a time since the epoch (2^51 us) times a
// limit up to 2^53.
__extension__ using Wide = __int128;

// Floor and ceiling of a / b for b > 0, a of either sign (C++ division truncates toward zero).
Wide floorDiv(Wide a, Wide b) { return a / b - (a % b != 0 && a < 0 ? 1 : 0); }
Wide ceilDiv(Wide a, Wide b) { return -floorDiv(-a, b); }

// One GCRA key as swl promises it, held as one number: its arrival time in 1/limit microseconds of the
// limit it was stored under. A request fits while the arrival time after it stays at most a window
// ahead; under another limit a fraction of a microsecond owed is rounded up to a whole one.
class ModelGcra {
 public:
  // The arrival time a call at `now` under `limit` finds, in 1/limit.max_requests microseconds (`scale`
  // to a microsecond): never before now.
  Wide arrival(std::int64_t now, const swl::Limit& limit) const {
    const Wide scale = limit.max_requests;
    Wide found = 0;
    if (stored_limit_ == limit.max_requests) {
      found = arrival_;
    } else if (stored_limit_ > 0) {
      found = ceilDiv(arrival_, stored_limit_) * scale;
    }
    return std::max(found, Wide{now} * scale);
  }
  bool fits(std::int64_t now, const swl::Limit& limit, std::int64_t cost) const {
    return arrival(now, limit) + Wide{cost} * limit.window.count() <=
           Wide{now + limit.window.count()} * limit.max_requests;
  }
  // Whether a call under `limit` finds a fraction of a microsecond owed under another limit.
  bool owesFractionUnder(const swl::Limit& limit) const {
    return stored_limit_ > 0 && stored_limit_ != limit.max_requests && arrival_ % stored_limit_ != 0;
  }
  void record(std::int64_t now, const swl::Limit& limit, std::int64_t cost) {
    arrival_ = arrival(now, limit) + Wide{cost} * limit.window.count();
    stored_limit_ = limit.max_requests;
  }
  // The answer to a request of `cost` that fit or not (`allowed`), recorded or not already.
  Expected answer(std::int64_t now, const swl::Limit& limit, std::int64_t cost, bool allowed) const {
    const Wide at = arrival(now, limit), scale = limit.max_requests, window = limit.window.count();
    Expected expected;
    expected.allowed = allowed;
    expected.remaining =
        static_cast<std::int64_t>(std::min(scale, floorDiv(Wide{now} * scale + window * scale - at, window)));
    expected.reset_after = static_cast<std::int64_t>(std::max(Wide{0}, ceilDiv(at, scale) - now));
    if (!allowed) {
      expected.retry_after = static_cast<std::int64_t>(ceilDiv(at + Wide{cost} * window, scale) - window - now);
    }
    return expected;
  }
  // The key's text in Redis, "tat frac limit"; "" before anything was recorded.
  std::string text() const {
    if (stored_limit_ == 0) return "";
    const auto tat = static_cast<std::int64_t>(arrival_ / stored_limit_),
               frac = static_cast<std::int64_t>(arrival_ % stored_limit_);
    return std::to_string(tat) + " " + std::to_string(frac) + " " + std::to_string(stored_limit_);
  }

 private:
  Wide arrival_ = 0;
  std::int64_t stored_limit_ = 0;  // 0: nothing recorded
};

// REQUIRE, not CHECK: once the log and the model part, every later answer differs too, and a trace of
// 10^5 decisions would print as many failures (for minutes) instead of the first, which is the one to read.
void checkAnswer(const swl::Decision& decision, const Expected& expected) {
  REQUIRE(decision.allowed == expected.allowed);
  REQUIRE(decision.remaining == std::max<std::int64_t>(0, expected.remaining));
  REQUIRE(decision.retry_after.count() == expected.retry_after);
  REQUIRE(decision.reset_after.count() == expected.reset_after);
}

// A trace's world: a private server, a manual clock, a plain limiter and one whose refusals count over the
// same sets, a MultiLimiter whose rules are those sets too, and the model of each set. Given `gcra_rule`,
// that rule of the MultiLimiter is a token bucket instead (its log limiters are then left unused), which
// a GcraLimiter peeks at.
class Trace : public ManualTime {
 public:
  Trace(std::uint64_t seed, std::vector<std::string> rule_names, swl::Limit base,
        std::optional<std::size_t> gcra_rule = std::nullopt)
      : random(seed), base_limit(base), rules_(std::move(rule_names)), gcra_rule_(gcra_rule) {
    counted_options = options;
    counted_options.rejected = swl::RejectedRequests::counted;
    std::vector<swl::Rule> rules;
    for (std::size_t rule = 0; rule < rules_.size(); ++rule) {
      const std::string& name = rules_[rule];
      logs_.emplace_back(connection, base, options, swl::PrefixKey("o:" + name), swl::CompactMember(), kLongTtl);
      counted_.emplace_back(connection, base, counted_options, swl::PrefixKey("o:" + name), swl::CompactMember(),
                            kLongTtl);
      if (isGcra(rule)) {
        rules.push_back(swl::Rule::gcra(name, base));
        gcra_peeker_ = std::make_unique<swl::GcraLimiter<>>(connection, base, options, swl::PrefixKey("o:" + name));
      } else {
        rules.emplace_back(name, base);
      }
    }
    multi_ = std::make_unique<Multi>(connection, rules, options, "o", swl::CompactMember(), kLongTtl);
    multi_counted_ =
        std::make_unique<Multi>(connection, std::move(rules), counted_options, "o", swl::CompactMember(), kLongTtl);
    now = clock.now().count();
  }

  std::int64_t uniform(std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  }
  bool chance(int percent) { return uniform(1, 100) <= percent; }

  void setNow(std::int64_t to) {
    if (to < now) tally.add("clock stepped back");
    now = to;
    clock.set(Micros(now));
  }

  ModelLog& model(std::size_t rule, const std::string& key) { return models_["o:" + rules_[rule] + ":" + key]; }
  ModelGcra& gcraModel(const std::string& key) { return gcra_models_[key]; }
  bool isGcra(std::size_t rule) const { return gcra_rule_ == rule; }
  // The rule other than the GCRA one, in a trace that has one.
  std::size_t logRule() const { return *gcra_rule_ == 0 ? 1 : 0; }
  Log& log(std::size_t rule, bool counted) { return counted ? counted_[rule] : logs_[rule]; }

  // One decision of the plain or counting limiter, checked.
  void decide(std::size_t rule, const std::string& key, std::int64_t cost, const swl::Limit& limit, bool counted) {
    const Expected expected = expectDecision(rule, key, cost, limit, counted);
    checkAnswer(log(rule, counted).tryAcquire(key, cost, limit), expected);
  }

  // A batch at one instant, checked request by request.
  void batch(std::size_t rule, const std::vector<std::string>& keys, const std::vector<std::int64_t>& costs,
             const std::vector<swl::Limit>& limits, bool counted) {
    std::vector<swl::AcquireRequest> requests;
    std::vector<Expected> expected;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      requests.push_back({keys[i], costs[i], limits[i]});
      expected.push_back(expectDecision(rule, keys[i], costs[i], limits[i], counted));
    }
    const std::vector<swl::Outcome> outcomes = log(rule, counted).tryAcquireMany(requests);
    REQUIRE(outcomes.size() == expected.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      INFO("request " << i << " of a batch of " << outcomes.size());
      REQUIRE_FALSE(outcomes[i].error);
      checkAnswer(outcomes[i].decision, expected[i]);
    }
    tally.add("batches at one instant");
  }

  void peek(std::size_t rule, const std::string& key, const swl::Limit& limit) {
    ModelLog& m = model(rule, key);
    const std::size_t first = m.firstIn(now, limit.window.count());
    const Expected expected = m.answer(first, true, 0, limit.max_requests, now, limit.window.count(), tally);
    const swl::Usage usage = log(rule, false).peek(key, limit);
    REQUIRE(usage.used == limit.max_requests - expected.remaining);
    REQUIRE(usage.reset_after.count() == expected.reset_after);
    countDecision(m, limit);
  }

  void reserve(std::size_t rule, const std::string& key, std::int64_t estimate, const swl::Limit& limit, bool counted) {
    const Expected expected = expectDecision(rule, key, estimate, limit, counted);
    const swl::Reservation reservation = log(rule, counted).reserve(key, estimate, limit);
    checkAnswer(reservation.decision, expected);
    REQUIRE(static_cast<bool>(reservation.receipt) == (expected.allowed || counted));
    if (reservation.receipt) {
      model(rule, key).nameNewest(reservation.receipt.member);
      receipts_.push_back({rule, key, reservation.receipt});
    }
  }

  void settle(std::int64_t actual) {
    if (receipts_.empty()) return;
    const Held& held = receipts_[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(receipts_.size()) - 1))];
    const swl::Receipt& receipt = held.receipt;
    const bool expected = model(held.rule, held.key)
                              .settle(receipt.member, receipt.units, actual, now, receipt.limit.window.count(), tally);
    REQUIRE(logs_[held.rule].settle(receipt, actual) == expected);
    touched_.insert({held.rule, held.key});
  }

  // A lease of up to `units` for `duration` (the core's primitive), giving the key's previous lease back
  // first with `used` of its units.
  void lease(std::size_t rule, const std::string& key, std::int64_t cost, std::int64_t units, Micros duration,
             const swl::Limit& limit) {
    swl::detail::LeaseTerms terms;
    terms.units = std::max(cost, std::min(units, limit.max_requests));
    terms.duration = std::min(duration, limit.window);
    terms.room_divisor = uniform(1, 4);
    swl::Receipt& previous = leases_[{rule, key}];
    ModelLog& m = model(rule, key);
    if (previous) {
      terms.previous = previous;
      terms.previous_used = uniform(0, previous.units);
      m.settle(previous.member, previous.units, terms.previous_used, now, limit.window.count(), tally);
      tally.add("leases given back");
    }
    const std::int64_t window = limit.window.count();
    const std::size_t first = m.firstIn(now, window);
    const std::int64_t held = m.unitsFrom(first);
    Expected expected;
    if (held + cost > limit.max_requests) {
      expected = m.answer(first, false, cost, limit.max_requests, now, window, tally);
      tally.add("leases refused");
    } else {
      const std::int64_t leased =
          std::max(cost, std::min(terms.units, (limit.max_requests - held) / terms.room_divisor));
      const std::int64_t at = leased > cost ? now + terms.duration.count() : now;
      m.record(now, at, window, leased);
      expected = m.answer(first, true, cost, limit.max_requests, now, window, tally);
      expected.leased = leased;
      tally.add("leases granted");
    }
    const swl::detail::LeaseGrant grant = logs_[rule].lease(key, cost, limit, terms);
    checkAnswer(grant.decision, expected);
    REQUIRE(grant.receipt.units == expected.leased);
    if (grant.receipt) m.nameNewest(grant.receipt.member);
    previous = grant.receipt;
    countDecision(m, limit);
    touched_.insert({rule, key});
  }

  // One decision over every rule, all or nothing, each rule under its own limit and at its own cost;
  // `one_cost` asks through the call that takes one cost for every rule (costs then all equal). Returns
  // whether each rule's cost fit.
  std::vector<bool> decideAll(const std::string& key, const std::vector<std::int64_t>& costs,
                              const std::vector<swl::Limit>& limits, bool counted, bool one_cost) {
    std::vector<std::size_t> firsts(rules_.size());
    std::vector<bool> fits;
    for (std::size_t rule = 0; rule < rules_.size(); ++rule) {
      if (isGcra(rule)) {
        tallyGcraFound(gcraModel(key), limits[rule]);
        fits.push_back(gcraModel(key).fits(now, limits[rule], costs[rule]));
        continue;
      }
      ModelLog& m = model(rule, key);
      firsts[rule] = m.firstIn(now, limits[rule].window.count());
      fits.push_back(m.unitsFrom(firsts[rule]) + costs[rule] <= limits[rule].max_requests);
    }
    const bool allowed = std::all_of(fits.begin(), fits.end(), [](bool fit) { return fit; });
    std::vector<Expected> expected;
    for (std::size_t rule = 0; rule < rules_.size(); ++rule) {
      if (isGcra(rule)) {
        ModelGcra& g = gcraModel(key);
        if (allowed || counted) g.record(now, limits[rule], costs[rule]);
        expected.push_back(g.answer(now, limits[rule], costs[rule], fits[rule]));
        ++decisions_;
        continue;
      }
      ModelLog& m = model(rule, key);
      const std::int64_t window = limits[rule].window.count();
      if (allowed || counted) m.record(now, now, window, costs[rule]);
      expected.push_back(
          m.answer(firsts[rule], fits[rule], costs[rule], limits[rule].max_requests, now, window, tally));
      countDecision(m, limits[rule]);
      touched_.insert({rule, key});
    }
    std::vector<std::string_view> keys(rules_.size(), key);
    Multi& multi = counted ? *multi_counted_ : *multi_;
    const swl::MultiDecision decision =
        one_cost ? multi.tryAcquire(keys, costs.front(), limits) : multi.tryAcquire(keys, costs, limits);
    REQUIRE(decision.rules.size() == expected.size());
    REQUIRE(decision.decision.allowed == allowed);
    for (std::size_t rule = 0; rule < rules_.size(); ++rule) {
      INFO("rule " << rules_[rule] << " at cost " << costs[rule]);
      checkAnswer(decision.rules[rule], expected[rule]);
    }
    REQUIRE(decision.binding == bindingOf(expected, allowed));
    tallyMulti(costs, fits, counted, one_cost);
    if (gcra_rule_) checkBeside(key, decision, expected, fits, costs, limits, counted);
    return fits;
  }

  // A GcraLimiter's peek at the GCRA rule's key, under `limit`: it reads the MultiLimiter's state as its own.
  void peekGcra(const std::string& key, const swl::Limit& limit) {
    const ModelGcra& g = gcraModel(key);
    const Expected expected = g.answer(now, limit, 0, g.fits(now, limit, 0));
    const swl::Usage usage = gcra_peeker_->peek(key, limit);
    REQUIRE(usage.used == limit.max_requests - expected.remaining);
    REQUIRE(usage.reset_after.count() == expected.reset_after);
    tally.add("GCRA keys peeked by GcraLimiter");
    ++decisions_;
  }

  // Whether the last MultiLimiter decision was a refusal by the GCRA rule, which a client may retry.
  bool refusalToRetry() const { return last_gcra_refusal_.has_value(); }

  // The client refused by the GCRA rule in the last decision asks again, the same costs under the same
  // limits, after exactly its retry_after or 1 us sooner. Whatever the model says, GCRA promises this much:
  // the same cost fits after exactly retry_after, and not 1 us before.
  void retryGcraRefusal(bool early) {
    const GcraRefusal refusal = *last_gcra_refusal_;
    setNow(refusal.at + refusal.retry_after - (early ? 1 : 0));
    const bool fit = decideAll(refusal.key, refusal.costs, refusal.limits, refusal.counted, false)[*gcra_rule_];
    REQUIRE(fit == !early);
    tally.add(early ? "GCRA refusals 1 us before the retry_after of a refusal"
                    : "GCRA admissions at exactly the retry_after of a refusal");
  }

  // check_log on every set the calls since the last check touched: each sum recomputed from its entries.
  void checkTouched() {
    for (const auto& [rule, key] : touched_) {
      const swl::LogCheck check = logs_[rule].checkLog(key);
      tally.add(check.counted_by_units ? "sets checked while counted by units"
                                       : "sets checked while counted by entries");
      if (check.counted_by_units) {
        most_entries = std::max(most_entries, check.entries);
        for (std::size_t level = 0; level < check.nodes.size(); ++level) {
          if (check.nodes[level] > 0) tally.add("checks finding sums stored at level " + std::to_string(level + 1));
        }
      }
    }
    touched_.clear();
  }

  std::int64_t decisions() const { return decisions_; }

  std::mt19937_64 random;
  swl::Limit base_limit;
  swl::LimiterOptions counted_options;
  std::int64_t now = 0;
  std::int64_t most_entries = 0;
  Tally tally;

 private:
  struct Held {
    std::size_t rule;
    std::string key;
    swl::Receipt receipt;
  };

  Expected expectDecision(std::size_t rule, const std::string& key, std::int64_t cost, const swl::Limit& limit,
                          bool counted) {
    ModelLog& m = model(rule, key);
    const std::int64_t window = limit.window.count();
    const std::size_t first = m.firstIn(now, window);
    const bool allowed = m.unitsFrom(first) + cost <= limit.max_requests;
    if (!allowed) tally.add(counted ? "refusals counted" : "refusals");
    if (cost > 0 && (allowed || counted)) m.record(now, now, window, cost);
    countDecision(m, limit);
    touched_.insert({rule, key});
    return m.answer(first, allowed, cost, limit.max_requests, now, window, tally);
  }

  // The rule a MultiDecision names: refused, the first with the longest wait; admitted, the first with the
  // least left.
  static std::size_t bindingOf(const std::vector<Expected>& rules, bool allowed) {
    const auto binding =
        allowed
            ? std::min_element(rules.begin(), rules.end(),
                               [](const Expected& a, const Expected& b) {
                                 return std::max<std::int64_t>(0, a.remaining) < std::max<std::int64_t>(0, b.remaining);
                               })
            : std::max_element(rules.begin(), rules.end(),
                               [](const Expected& a, const Expected& b) { return a.retry_after < b.retry_after; });
    return static_cast<std::size_t>(binding - rules.begin());
  }

  // Which way a MultiLimiter decision went: admitted, refused by one rule or by all, and the case costs
  // per rule exist for, a rule refusing its cost while another rule, asked for less, would admit.
  void tallyMulti(const std::vector<std::int64_t>& costs, const std::vector<bool>& fits, bool counted, bool one_cost) {
    tally.add("MultiLimiter decisions");
    if (one_cost) {
      tally.add("MultiLimiter decisions of one cost for every rule");
    } else if (std::adjacent_find(costs.begin(), costs.end(), std::not_equal_to<>()) != costs.end()) {
      tally.add("MultiLimiter decisions of different costs per rule");
    }
    const auto refusing = static_cast<std::size_t>(std::count(fits.begin(), fits.end(), false));
    if (refusing == 0) {
      tally.add("MultiLimiter decisions admitted by every rule");
      return;
    }
    if (counted) tally.add("MultiLimiter refusals counted");
    if (refusing == fits.size()) tally.add("MultiLimiter refusals by every rule");
    bool larger_beside_smaller = false;
    for (std::size_t rule = 0; rule < fits.size(); ++rule) {
      if (fits[rule]) continue;
      if (refusing == 1) tally.add("MultiLimiter refusals by rule " + rules_[rule] + " alone");
      for (std::size_t other = 0; other < fits.size(); ++other) {
        larger_beside_smaller = larger_beside_smaller || (fits[other] && costs[other] < costs[rule]);
      }
    }
    if (larger_beside_smaller) tally.add("MultiLimiter refusals of a larger cost beside a smaller one that fit");
  }

  // What a GCRA decision found before it: a full bucket or one still refilling, a fraction owed under
  // another limit.
  void tallyGcraFound(const ModelGcra& g, const swl::Limit& limit) {
    const bool full = g.arrival(now, limit) == Wide{now} * limit.max_requests;
    tally.add(full ? "GCRA decisions from a full bucket" : "GCRA decisions from a bucket still refilling");
    if (g.owesFractionUnder(limit)) tally.add("GCRA limits per call rounding a fraction owed up");
  }

  // After a MultiLimiter decision with a GCRA rule: the GCRA key holds what the model says (a refusal by
  // the log moved nothing), the log holds what its model says (a refusal by GCRA recorded nothing), and
  // how the GCRA rule's decision came after the one before on its key.
  void checkBeside(const std::string& key, const swl::MultiDecision& decision, const std::vector<Expected>& expected,
                   const std::vector<bool>& fits, const std::vector<std::int64_t>& costs,
                   const std::vector<swl::Limit>& limits, bool counted) {
    const std::size_t gcra = *gcra_rule_, log = logRule();
    swl::Reply stored = connection.command({"GET", "o:" + rules_[gcra] + ":" + key});
    REQUIRE(std::string(stored->text()) == gcraModel(key).text());
    peek(log, key, limits[log]);
    const bool allowed = decision.decision.allowed;
    if (!allowed && !counted && fits[gcra]) tally.add("GCRA keys unchanged by the log's refusal");
    if (!allowed && !counted && fits[log]) tally.add("logs unchanged by the GCRA rule's refusal");
    if (expected[gcra].remaining < 0) tally.add("GCRA refusals counted past a window ahead");
    tally.add(gcra == 0 ? "MultiLimiter decisions with the GCRA rule first"
                        : "MultiLimiter decisions with the GCRA rule second");

    // A client refused by the bucket that asks again later: refused again while too few units came back.
    std::optional<std::int64_t>& refused_at = gcra_refused_at_[key];
    if (refused_at && *refused_at < now) {
      tally.add(fits[gcra] ? "GCRA admissions after waiting for a refill"
                           : "GCRA refusals after a wait too short to refill");
    }
    refused_at = fits[gcra] ? std::nullopt : std::optional<std::int64_t>(now);
    last_gcra_refusal_.reset();
    if (!fits[gcra])
      last_gcra_refusal_ = GcraRefusal{key, costs, limits, counted, now, decision.rules[gcra].retry_after.count()};
  }

  void countDecision(const ModelLog& m, const swl::Limit& limit) {
    ++decisions_;
    if (m.horizonBinds(now, limit.window.count())) tally.add("windows wider than the horizon allows");
  }

  // A refusal by the GCRA rule, as a client would retry it.
  struct GcraRefusal {
    std::string key;
    std::vector<std::int64_t> costs;
    std::vector<swl::Limit> limits;
    bool counted;
    std::int64_t at;
    std::int64_t retry_after;
  };

  std::vector<std::string> rules_;
  std::optional<std::size_t> gcra_rule_;
  std::unique_ptr<swl::GcraLimiter<>> gcra_peeker_;
  std::map<std::string, ModelGcra> gcra_models_;
  std::map<std::string, std::optional<std::int64_t>> gcra_refused_at_;  // a key's last refusal by GCRA, until it admits
  std::optional<GcraRefusal> last_gcra_refusal_;
  std::vector<Log> logs_, counted_;
  std::unique_ptr<Multi> multi_, multi_counted_;
  std::map<std::string, ModelLog> models_;
  std::map<std::pair<std::size_t, std::string>, swl::Receipt> leases_;
  std::vector<Held> receipts_;
  std::set<std::pair<std::size_t, std::string>> touched_;
  std::int64_t decisions_ = 0;
};

}  // namespace

namespace {

// A cost as a gateway sees them: mostly one unit (a token budget), now and then more, sometimes the limit.
std::int64_t randomCost(Trace& trace, std::int64_t limit) {
  const std::int64_t kind = trace.uniform(1, 100);
  if (kind <= 60) return 1;
  if (kind <= 90) return trace.uniform(1, std::min<std::int64_t>(20, limit));
  return trace.uniform(1, limit);
}

// A cost per rule for a MultiLimiter decision under `limits`, as each of Envoy's descriptors brings its
// own; now and then (`one_cost`) one for every rule.
std::vector<std::int64_t> randomCosts(Trace& trace, const std::vector<swl::Limit>& limits, bool one_cost) {
  std::vector<std::int64_t> costs;
  if (one_cost) {
    costs.assign(limits.size(), randomCost(trace, std::min(limits[0].max_requests, limits[1].max_requests)));
  } else {
    for (const swl::Limit& rule_limit : limits) costs.push_back(randomCost(trace, rule_limit.max_requests));
  }
  return costs;
}

// The limit of one call: the base one, or now and then a tenant's own, of another size or window.
swl::Limit randomLimit(Trace& trace, int percent_changed) {
  swl::Limit limit = trace.base_limit;
  if (!trace.chance(percent_changed)) return limit;
  const std::int64_t factors[] = {1, 2, 4};
  const std::int64_t factor = factors[trace.uniform(0, 2)];
  if (trace.chance(50)) limit.window = trace.chance(50) ? limit.window * factor : limit.window / factor;
  if (trace.chance(50))
    limit.max_requests =
        std::max<std::int64_t>(1, trace.chance(50) ? limit.max_requests * factor : limit.max_requests / factor);
  return limit;
}

// The next moment: the same microsecond, the next, a step of up to 200 ms, a jump past the window, and,
// where the trace wants it, a step back.
void advance(Trace& trace, int percent_back) {
  const std::int64_t window = trace.base_limit.window.count();
  const std::int64_t kind = trace.uniform(1, 100);
  if (kind <= percent_back) {
    trace.setNow(trace.now - trace.uniform(1, window / 2));
  } else if (kind <= percent_back + 10) {
    trace.setNow(trace.now);
  } else if (kind <= percent_back + 20) {
    trace.setNow(trace.now + 1);
  } else if (kind <= 98) {
    trace.setNow(trace.now + trace.uniform(0, std::min<std::int64_t>(200'000, window / 4)));
  } else {
    trace.setNow(trace.now + window + trace.uniform(0, window));
  }
}

// One step of a mixed trace over `keys`: any call, any limit.
void mixedStep(Trace& trace, const std::vector<std::string>& keys, int percent_limits_changed) {
  const std::string& key = keys[static_cast<std::size_t>(trace.uniform(0, static_cast<std::int64_t>(keys.size()) - 1))];
  const std::size_t rule = static_cast<std::size_t>(trace.uniform(0, 1));
  const swl::Limit limit = randomLimit(trace, percent_limits_changed);
  const std::int64_t op = trace.uniform(1, 100);
  INFO("op " << op << " on " << key << " of rule " << rule << " at " << trace.now << ", limit " << limit.max_requests
             << " per " << limit.window.count() << " us");
  if (op <= 35) {
    trace.decide(rule, key, randomCost(trace, limit.max_requests), limit, false);
  } else if (op <= 50) {
    trace.decide(rule, key, randomCost(trace, limit.max_requests), limit, true);
  } else if (op <= 55) {
    std::vector<std::string> batch_keys;
    std::vector<std::int64_t> costs;
    std::vector<swl::Limit> limits;
    const std::int64_t size = trace.uniform(1, 300);
    for (std::int64_t i = 0; i < size; ++i) {
      limits.push_back(trace.chance(90) ? limit : randomLimit(trace, 100));
      batch_keys.push_back(trace.chance(80) ? key : keys[static_cast<std::size_t>(i) % keys.size()]);
      costs.push_back(trace.chance(90) ? 1 : randomCost(trace, limits.back().max_requests));
    }
    trace.batch(rule, batch_keys, costs, limits, trace.chance(30));
  } else if (op <= 65) {
    trace.reserve(rule, key, randomCost(trace, limit.max_requests), limit, trace.chance(20));
  } else if (op <= 75) {
    const std::int64_t kind = trace.uniform(1, 3);
    trace.settle(kind == 1 ? 0 : kind == 2 ? trace.uniform(0, 3) : trace.uniform(1, 2 * trace.base_limit.max_requests));
  } else if (op <= 80) {
    trace.lease(rule, key, trace.uniform(1, std::min<std::int64_t>(3, limit.max_requests)),
                trace.uniform(1, limit.max_requests), Micros(trace.uniform(0, limit.window.count() / 2)), limit);
  } else if (op <= 90) {
    trace.peek(rule, key, limit);
  } else {
    const std::vector<swl::Limit> limits{limit, randomLimit(trace, percent_limits_changed)};
    const bool one_cost = trace.chance(20);
    trace.decideAll(key, randomCosts(trace, limits, one_cost), limits, trace.chance(30), one_cost);
  }
}

// One step of a trace whose MultiLimiter has a GCRA rule beside a log: mostly decisions of both, now and
// then a client retrying a GCRA refusal at its retry_after (or 1 us sooner), the log decided alone, the
// bucket peeked by GcraLimiter.
void gcraStep(Trace& trace, const std::vector<std::string>& keys, int percent_limits_changed) {
  if (trace.refusalToRetry() && trace.chance(30)) {
    trace.retryGcraRefusal(trace.chance(50));
    return;
  }
  const std::string& key = keys[static_cast<std::size_t>(trace.uniform(0, static_cast<std::int64_t>(keys.size()) - 1))];
  const swl::Limit limit = randomLimit(trace, percent_limits_changed);
  const std::int64_t op = trace.uniform(1, 100);
  INFO("op " << op << " on " << key << " at " << trace.now << ", limit " << limit.max_requests << " per "
             << limit.window.count() << " us");
  if (op <= 15) {
    trace.decide(trace.logRule(), key, randomCost(trace, limit.max_requests), limit, trace.chance(30));
  } else if (op <= 20) {
    trace.peekGcra(key, limit);
  } else {
    const std::vector<swl::Limit> limits{limit, randomLimit(trace, percent_limits_changed)};
    const bool one_cost = trace.chance(20);
    trace.decideAll(key, randomCosts(trace, limits, one_cost), limits, trace.chance(30), one_cost);
  }
}

void requireReached(const Tally& tally, const std::vector<std::string>& boundaries) {
  for (const std::string& boundary : boundaries) {
    INFO("never reached: " << boundary);
    CHECK(tally[boundary] > 0);
  }
}

}  // namespace

TEST_CASE("mixed traces agree with the model on every answer, and every set's sums with its entries") {
  // 40 rounds of 400 steps per seed, as many seeds as the share of decisions takes.
  const std::int64_t wanted = swl::test::wanted("SWL_ORACLE_DECISIONS", 100'000) * 3 / 10;
  std::int64_t decisions = 0;
  Tally tally;
  for (std::uint64_t seed = 1; decisions < wanted || seed <= 2; ++seed) {
    const swl::Limit bases[] = {{1'000'000, 60s}, {5000, 60s}, {40, 1s}};
    Trace trace(seed, {"a", "b"}, bases[seed % 3]);
    INFO("seed " << seed);
    const std::vector<std::string> keys{"k1", "k2", "k3"};
    for (int round = 0; round < 40 && trace.decisions() + decisions < wanted + 1; ++round) {
      for (int step = 0; step < 400; ++step) {
        INFO("round " << round << ", step " << step);
        advance(trace, 2);
        mixedStep(trace, keys, 20);
        trace.checkTouched();
      }
    }
    decisions += trace.decisions();
    for (const auto& [what, count] : trace.tally.counts) tally.add(what, count);
  }
  std::cout << "mixed traces: " << decisions << " decisions, each set checked after every call\n" << tally.text();
  requireReached(tally, {"refusals", "refusals counted", "batches at one instant", "settles to nothing",
                         "settles to less", "settles to more", "leases granted", "leases refused", "leases given back",
                         "MultiLimiter decisions", "windows wider than the horizon allows", "clock stepped back",
                         "sets checked while counted by units", "sets checked while counted by entries",
                         "waits found through the sums", "checks finding sums stored at level 1"});
  requireReached(
      tally, {"MultiLimiter decisions of different costs per rule", "MultiLimiter decisions of one cost for every rule",
              "MultiLimiter decisions admitted by every rule", "MultiLimiter refusals by rule a alone",
              "MultiLimiter refusals by rule b alone", "MultiLimiter refusals by every rule",
              "MultiLimiter refusals of a larger cost beside a smaller one that fit", "MultiLimiter refusals counted"});
}

TEST_CASE("windows that change every call and a clock that steps back keep to the horizon") {
  const std::int64_t wanted = swl::test::wanted("SWL_ORACLE_DECISIONS", 100'000) / 10;
  std::int64_t decisions = 0;
  Tally tally;
  for (std::uint64_t seed = 101; decisions < wanted || seed <= 102; ++seed) {
    Trace trace(seed, {"a", "b"}, swl::Limit{seed % 2 == 0 ? 30 : 3000, 10s});
    INFO("seed " << seed);
    const std::vector<std::string> keys{"w1", "w2"};
    for (int step = 0; step < 4000 && trace.decisions() + decisions < wanted + 1; ++step) {
      INFO("step " << step);
      advance(trace, 15);
      mixedStep(trace, keys, 80);
      trace.checkTouched();
    }
    decisions += trace.decisions();
    for (const auto& [what, count] : trace.tally.counts) tally.add(what, count);
  }
  std::cout << "changing windows: " << decisions << " decisions, each set checked after every call\n" << tally.text();
  requireReached(tally, {"windows wider than the horizon allows", "clock stepped back", "refusals counted",
                         "settles to nothing", "MultiLimiter decisions", "sets checked while counted by units"});
}

TEST_CASE("token budgets reach windows of 10^5 entries and every level of the sums, exact throughout") {
  const std::int64_t wanted = swl::test::wanted("SWL_ORACLE_DECISIONS", 100'000) * 5 / 10;
  std::int64_t decisions = 0;
  Tally tally;
  std::int64_t most_entries = 0;
  for (std::uint64_t seed = 201; decisions < wanted || seed <= 201; ++seed) {
    Trace trace(seed, {"a"}, swl::Limit{1'000'000, 60s});
    INFO("seed " << seed);
    const std::string key = "budget";
    const swl::Limit limit = trace.base_limit;
    const std::int64_t window = limit.window.count();
    // The set turned weighted by a single request, then filled by requests of one unit (issue 36's drift).
    trace.decide(0, key, 5000, limit, false);
    for (int batch = 1; trace.decisions() + decisions < wanted || trace.most_entries < 150'000; ++batch) {
      INFO("batch " << batch << " at " << trace.now);
      trace.setNow(trace.now + trace.uniform(0, 180'000));
      const std::vector<std::string> keys(300, key);
      std::vector<std::int64_t> costs;
      for (int i = 0; i < 300; ++i) costs.push_back(trace.chance(97) ? 1 : trace.uniform(2, 50));
      trace.batch(0, keys, costs, std::vector<swl::Limit>(300, limit), false);
      if (batch % 5 == 0) {
        // A refusal whose wait lies anywhere in the window: under a limit just below what the window holds.
        const std::int64_t held = trace.model(0, key).unitsFrom(trace.model(0, key).firstIn(trace.now, window));
        const std::int64_t needed = trace.uniform(1, held);
        trace.decide(0, key, 1, swl::Limit{held + 1 - needed, limit.window}, trace.chance(10));
      }
      if (batch % 7 == 0) trace.peek(0, key, swl::Limit{limit.max_requests, limit.window * 2});
      if (batch % 10 == 0) {
        trace.reserve(0, key, trace.uniform(1, 200), limit, false);
        const std::int64_t kind = trace.uniform(1, 3);
        trace.settle(kind == 1 ? 0 : kind == 2 ? trace.uniform(0, 3) : trace.uniform(1, 400));
        trace.lease(0, key, 1, trace.uniform(100, 5000), Micros(trace.uniform(0, 1'000'000)), limit);
      }
      // A tenant whose window is a second shorter records: the horizon binds the next calls for a second.
      if (batch % 97 == 0) trace.decide(0, key, 1, swl::Limit{limit.max_requests, limit.window - 1s}, false);
      if (batch % 100 == 0) trace.checkTouched();
    }
    trace.checkTouched();
    decisions += trace.decisions();
    most_entries = std::max(most_entries, trace.most_entries);
    for (const auto& [what, count] : trace.tally.counts) tally.add(what, count);
  }
  std::cout << "token budgets: " << decisions << " decisions, sets of up to " << most_entries
            << " entries checked every 100 batches\n"
            << tally.text();
  CHECK(most_entries >= 100'000);
  requireReached(tally, {"checks finding sums stored at level 1", "checks finding sums stored at level 2",
                         "checks finding sums stored at level 3", "checks finding sums stored at level 4",
                         "waits found over 65536 entries from either end", "settles to nothing", "leases granted",
                         "windows wider than the horizon allows"});
}

TEST_CASE("traces with a GCRA rule beside a log agree with both models: all or nothing, each rule at its own cost") {
  const std::int64_t wanted = swl::test::wanted("SWL_ORACLE_DECISIONS", 100'000) / 10;
  std::int64_t decisions = 0;
  Tally tally;
  // Each base limit with the GCRA rule first and second (the first rule's write is the script's first),
  // each trace an eighth of the decisions.
  const std::int64_t per_trace = std::max<std::int64_t>(wanted / 8, 2000);
  for (std::uint64_t seed = 301; decisions < wanted || seed <= 308; ++seed) {
    // 3 and 7 a window leave fractions of a microsecond; 40 a second and 5,000 a minute do not.
    const swl::Limit bases[] = {{3, 1s}, {40, 1s}, {7, 10s}, {5000, 60s}};
    const bool gcra_first = (seed / 4) % 2 == 0;
    Trace trace(seed, gcra_first ? std::vector<std::string>{"gcra", "log"} : std::vector<std::string>{"log", "gcra"},
                bases[seed % 4], gcra_first ? 0 : 1);
    INFO("seed " << seed);
    const std::vector<std::string> keys{"g1", "g2"};
    for (int step = 0; trace.decisions() < per_trace; ++step) {
      INFO("step " << step);
      advance(trace, 2);
      gcraStep(trace, keys, 20);
    }
    decisions += trace.decisions();
    for (const auto& [what, count] : trace.tally.counts) tally.add(what, count);
  }
  std::cout << "GCRA beside a log: " << decisions << " decisions, the bucket's key and the log checked after each\n"
            << tally.text();
  requireReached(
      tally, {"MultiLimiter decisions admitted by every rule", "MultiLimiter refusals by rule gcra alone",
              "MultiLimiter refusals by rule log alone", "MultiLimiter refusals by every rule",
              "MultiLimiter refusals counted", "MultiLimiter decisions of different costs per rule",
              "MultiLimiter decisions of one cost for every rule",
              "MultiLimiter refusals of a larger cost beside a smaller one that fit",
              "MultiLimiter decisions with the GCRA rule first", "MultiLimiter decisions with the GCRA rule second"});
  requireReached(
      tally,
      {"GCRA keys unchanged by the log's refusal", "logs unchanged by the GCRA rule's refusal",
       "GCRA decisions from a full bucket", "GCRA decisions from a bucket still refilling",
       "GCRA admissions after waiting for a refill", "GCRA refusals after a wait too short to refill",
       "GCRA admissions at exactly the retry_after of a refusal",
       "GCRA refusals 1 us before the retry_after of a refusal", "GCRA limits per call rounding a fraction owed up",
       "GCRA refusals counted past a window ahead", "GCRA keys peeked by GcraLimiter", "clock stepped back"});
}
