// Weighted requests: one entry per request whatever its cost, reserve-then-settle, and the bucketed
// window, each held to a plain in-memory oracle on random traces with a manual clock.

#include <swl/swl.hpp>

#include "support/log_layout.hpp"
#include "support/manual_time.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using swl::test::integerReply;
using swl::test::logEntries;
using swl::test::ManualTime;

namespace {

using Micros = std::chrono::microseconds;

// The oracle: per key, the recorded requests as (time, units). A request counts while now is before
// the time it leaves: time + window for the exact window; its bucket's end + window for the bucketed one.
// The exact log keeps a key's entries in time order: one recorded at or before the newest is recorded
// 1 us after it (`in_time_order`).
class Oracle {
 public:
  struct Entry {
    std::int64_t at;
    std::int64_t units;
    int receipt;  // -1: none
  };
  using LeavesAt = std::function<std::int64_t(std::int64_t at)>;

  Oracle(swl::Limit limit, bool counted, LeavesAt leaves_at, bool in_time_order = true)
      : limit_(limit.max_requests),
        counted_(counted),
        in_time_order_(in_time_order),
        leaves_at_(std::move(leaves_at)) {}

  struct Expected {
    bool allowed;
    std::int64_t used;  // after the decision, past the limit too
    std::int64_t remaining;
    Micros retry_after;
    Micros reset_after;
  };

  Expected decide(const std::string& key, std::int64_t cost, std::int64_t now, int receipt = -1) {
    return decideAs(key, cost, now, fits(key, cost, now) || counted_, receipt);
  }

  bool fits(const std::string& key, std::int64_t cost, std::int64_t now) const {
    return unitsOf(liveEntries(key, now)) + cost <= limit_;
  }

  // A decision whose recording was settled elsewhere (MultiLimiter records in every rule or in none).
  Expected decideAs(const std::string& key, std::int64_t cost, std::int64_t now, bool recorded, int receipt = -1) {
    forgetLeft(key, now);
    std::vector<Entry> live = liveEntries(key, now);
    std::int64_t used = unitsOf(live);
    const bool allowed = used + cost <= limit_;
    if (recorded) {
      std::int64_t at = now;
      if (in_time_order_ && newest_.count(key) != 0) at = std::max(now, newest_[key] + 1);
      newest_[key] = at;
      entries_[key].push_back({at, cost, receipt});  // a counted refusal was recorded: it can be settled
      live.push_back(entries_[key].back());
      used += cost;
    }
    Expected expected{allowed, used, std::max<std::int64_t>(0, limit_ - used), 0us, resetAfter(live, now)};
    if (!allowed) expected.retry_after = freedAfter(live, used + cost - limit_, now);
    return expected;
  }

  Expected peek(const std::string& key, std::int64_t now) {
    forgetLeft(key, now);
    const std::vector<Entry> live = liveEntries(key, now);
    const std::int64_t used = unitsOf(live);
    return {true, used, std::max<std::int64_t>(0, limit_ - used), 0us, resetAfter(live, now)};
  }

  // The units recorded for `key` that a window of `window` ending at `now` holds, for the bounds.
  std::int64_t unitsWithin(const std::string& key, std::int64_t now, std::int64_t window) const {
    std::int64_t units = 0;
    for (const Entry& entry : entriesOf(key)) units += entry.at + window > now ? entry.units : 0;
    return units;
  }

  bool settle(int receipt, std::int64_t actual, std::int64_t now) {
    for (auto& [key, entries] : entries_) {
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        if (it->receipt != receipt || leaves_at_(it->at) <= now) continue;
        it->receipt = -1;    // settled: a second settle finds nothing
        it->units = actual;  // at 0 it keeps its place until it leaves, as Redis's entry does
        return true;
      }
    }
    return false;
  }

  // When the last request recorded for `key` leaves the window.
  std::int64_t lastLeaves(const std::string& key) const {
    const auto found = newest_.find(key);
    return found == newest_.end() ? 0 : leaves_at_(found->second);
  }

  void reset(const std::string& key) {
    entries_.erase(key);
    newest_.erase(key);
  }

 private:
  // Entries recorded in time order leave in that order, and these traces never turn the clock back: the
  // oldest that have left are gone for good, and a long trace's decisions cost what its window holds.
  void forgetLeft(const std::string& key, std::int64_t now) {
    if (!in_time_order_) return;
    std::vector<Entry>& entries = entries_[key];
    const auto first_live =
        std::find_if(entries.begin(), entries.end(), [&](const Entry& entry) { return leaves_at_(entry.at) > now; });
    if (first_live - entries.begin() > 1024 || first_live == entries.end()) entries.erase(entries.begin(), first_live);
  }

  const std::vector<Entry>& entriesOf(const std::string& key) const {
    static const std::vector<Entry> none;
    const auto found = entries_.find(key);
    return found == entries_.end() ? none : found->second;
  }

  std::vector<Entry> liveEntries(const std::string& key, std::int64_t now) const {
    std::vector<Entry> live;
    for (const Entry& entry : entriesOf(key)) {
      if (leaves_at_(entry.at) > now) live.push_back(entry);
    }
    if (!in_time_order_) {
      std::stable_sort(live.begin(), live.end(),
                       [&](const Entry& a, const Entry& b) { return leaves_at_(a.at) < leaves_at_(b.at); });
    }
    return live;
  }

  static std::int64_t unitsOf(const std::vector<Entry>& entries) {
    std::int64_t units = 0;
    for (const Entry& entry : entries) units += entry.units;
    return units;
  }

  // When the window holds nothing: the last entry that holds a unit has left.
  Micros resetAfter(const std::vector<Entry>& live, std::int64_t now) const {
    std::int64_t last = now;
    for (const Entry& entry : live) {
      if (entry.units > 0) last = std::max(last, leaves_at_(entry.at));
    }
    return Micros(last - now);
  }

  // `live` in the order its entries leave (liveEntries' order, the newest last).
  Micros freedAfter(const std::vector<Entry>& live, std::int64_t needed, std::int64_t now) const {
    std::int64_t freed = 0;
    for (const Entry& entry : live) {
      freed += entry.units;
      if (freed >= needed) return Micros(leaves_at_(entry.at) - now);
    }
    FAIL("the oracle's window does not hold the units it needs to free");
    return 0us;
  }

  std::int64_t limit_;
  bool counted_;
  bool in_time_order_;
  LeavesAt leaves_at_;
  std::map<std::string, std::vector<Entry>> entries_;
  std::map<std::string, std::int64_t> newest_;
};

// A cost from 1..limit, mostly small (the gateway's short prompts), sometimes up to the whole limit; or,
// for traces of one-unit requests, 1 but now and then 2, so that sets go from one-unit entries to
// weighted ones and back.
std::int64_t randomCost(std::mt19937_64& random, std::int64_t limit, bool mostly_one = false) {
  if (mostly_one) return std::uniform_int_distribution<int>(0, 19)(random) == 0 ? 2 : 1;
  const int kind = std::uniform_int_distribution<int>(0, 9)(random);
  const std::int64_t most = kind < 6 ? std::min<std::int64_t>(5, limit) : kind < 9 ? limit / 2 : limit;
  return std::uniform_int_distribution<std::int64_t>(1, std::max<std::int64_t>(1, most))(random);
}

// The next moment of a trace: the same microsecond, the next, a random step, or one microsecond either
// side of the time an entry leaves (where an off-by-one would show), now and then a jump past the window.
std::int64_t nextNow(std::mt19937_64& random, std::int64_t now, std::int64_t window,
                     const std::vector<std::int64_t>& leave_times) {
  const int kind = std::uniform_int_distribution<int>(0, 19)(random);
  if (kind < 2) return now;
  if (kind < 4) return now + 1;
  if (kind < 12 || leave_times.empty()) return now + std::uniform_int_distribution<std::int64_t>(1, window / 8)(random);
  if (kind == 19) return now + window + std::uniform_int_distribution<std::int64_t>(0, window)(random);
  const std::int64_t leaves =
      leave_times[std::uniform_int_distribution<std::size_t>(0, leave_times.size() - 1)(random)];
  return std::max(now, leaves + std::uniform_int_distribution<std::int64_t>(-1, 1)(random));
}

void checkDecision(const swl::Decision& decision, const Oracle::Expected& expected) {
  CHECK(decision.allowed == expected.allowed);
  CHECK(decision.remaining == expected.remaining);
  CHECK(decision.retry_after == expected.retry_after);
  CHECK(decision.reset_after == expected.reset_after);
}

void checkUsage(const swl::Usage& usage, const Oracle::Expected& expected) {
  CHECK(usage.used == expected.used);
  CHECK(usage.remaining == expected.remaining);
  CHECK(usage.reset_after == expected.reset_after);
}

const std::vector<std::string> kKeys = {"a", "b", "c"};

}  // namespace

TEST_CASE_METHOD(ManualTime,
                 "random traces: the log agrees with an exact oracle on every decision, peek, reset and settle") {
  const bool counted = GENERATE(false, true);
  const bool mostly_one = GENERATE(false, true);
  const std::uint64_t seed = GENERATE(1, 2, 3);
  INFO("seed " << seed << (counted ? ", refusals counted" : ", refusals free")
               << (mostly_one ? ", costs of one (now and then two)" : ", costs of 1..limit"));
  std::mt19937_64 random(seed);

  const swl::Limit limit{40, 60s};
  const std::int64_t window = limit.window.count();
  options.rejected = counted ? swl::RejectedRequests::counted : swl::RejectedRequests::not_counted;
  swl::SlidingWindowLimiter<> limiter(connection, limit, options,
                                      swl::PrefixKey("log" + std::to_string(seed) + (mostly_one ? "one" : "any")));
  Oracle oracle(limit, counted, [&](std::int64_t at) { return at + window; });

  std::vector<swl::Receipt> receipts;
  std::vector<std::int64_t> leave_times;
  std::int64_t now = clock.now().count();
  for (int step = 0; step < 1500; ++step) {
    now = nextNow(random, now, window, leave_times);
    clock.set(Micros(now));
    const std::string& key = kKeys[std::uniform_int_distribution<std::size_t>(0, kKeys.size() - 1)(random)];
    const int op = std::uniform_int_distribution<int>(0, 19)(random);
    INFO("step " << step << ", op " << op << ", key " << key << ", now " << now);
    if (op < 12) {
      const std::int64_t cost = randomCost(random, limit.max_requests, mostly_one);
      INFO("cost " << cost);
      checkDecision(limiter.tryAcquire(key, cost), oracle.decide(key, cost, now));
      leave_times.push_back(now + window);
    } else if (op < 15) {
      const std::int64_t estimate = randomCost(random, limit.max_requests, mostly_one);
      const swl::Reservation reservation = limiter.reserve(key, estimate);
      checkDecision(reservation.decision, oracle.decide(key, estimate, now, static_cast<int>(receipts.size())));
      CHECK(static_cast<bool>(reservation.receipt) == (reservation.decision.allowed || counted));
      receipts.push_back(reservation.receipt);
      leave_times.push_back(now + window);
    } else if (op < 18 && !receipts.empty()) {
      const int receipt = std::uniform_int_distribution<int>(0, static_cast<int>(receipts.size()) - 1)(random);
      const std::int64_t actual =
          std::uniform_int_distribution<std::int64_t>(0, mostly_one ? 2 : 2 * limit.max_requests)(random);
      INFO("settle receipt " << receipt << " at " << actual);
      const bool settled = limiter.settle(receipts[receipt], actual);
      CHECK(settled == (receipts[receipt] && oracle.settle(receipt, actual, now)));
    } else if (op < 19) {
      checkUsage(limiter.peek(key), oracle.peek(key, now));
    } else {
      limiter.reset(key);
      oracle.reset(key);
    }
  }
}

TEST_CASE_METHOD(ManualTime,
                 "random traces over windows of thousands of entries and half slid-out bursts: every decision "
                 "exact, every sum right") {
  const bool counted = GENERATE(false, true);
  const std::uint64_t seed = GENERATE(7, 8);
  INFO("seed " << seed << (counted ? ", refusals counted" : ", refusals free"));
  std::mt19937_64 random(seed);

  // Windows of up to some 6,000 entries (more when refusals count): the sums span two levels of nodes.
  const swl::Limit limit{6'000, 10s};
  const std::int64_t window = limit.window.count();
  options.rejected = counted ? swl::RejectedRequests::counted : swl::RejectedRequests::not_counted;
  const std::string prefix = "wide" + std::to_string(seed) + (counted ? "c" : "f");
  swl::SlidingWindowLimiter<> limiter(connection, limit, options, swl::PrefixKey(prefix));
  Oracle oracle(limit, counted, [&](std::int64_t at) { return at + window; });
  const std::vector<std::string> keys = {"a", "b"};

  std::vector<swl::Receipt> receipts;
  std::vector<std::int64_t> leave_times;
  std::int64_t now = clock.now().count();
  const auto smallCost = [&] {
    const int kind = std::uniform_int_distribution<int>(0, 19)(random);
    if (kind < 12) return std::int64_t{1};
    if (kind < 19) return std::uniform_int_distribution<std::int64_t>(2, 4)(random);
    return std::uniform_int_distribution<std::int64_t>(1, limit.max_requests / 3)(random);
  };
  for (int step = 0; step < 600; ++step) {
    // Mostly small steps, so that windows fill; now and then to one microsecond around a recorded
    // request's leaving (inside the bursts too), or past a whole window.
    const int when = std::uniform_int_distribution<int>(0, 19)(random);
    if (when < 14 || leave_times.empty()) {
      now += std::uniform_int_distribution<std::int64_t>(0, window / 400)(random);
    } else if (when < 19) {
      const std::int64_t leaves =
          leave_times[std::uniform_int_distribution<std::size_t>(0, leave_times.size() - 1)(random)];
      now = std::max(now, leaves + std::uniform_int_distribution<std::int64_t>(-1, 1)(random));
    } else {
      now += window + std::uniform_int_distribution<std::int64_t>(0, window / 10)(random);
    }
    clock.set(Micros(now));
    const std::string& key = keys[std::uniform_int_distribution<std::size_t>(0, keys.size() - 1)(random)];
    const int op = std::uniform_int_distribution<int>(0, 19)(random);
    INFO("step " << step << ", op " << op << ", key " << key << ", now " << now);
    if (op < 2) {
      // A burst in one microsecond: its entries lie 1 us apart, and later windows slide through them.
      const int burst = std::uniform_int_distribution<int>(20, 400)(random);
      for (int i = 0; i < burst; ++i) {
        const std::int64_t cost = std::uniform_int_distribution<std::int64_t>(1, 2)(random);
        INFO("burst request " << i << ", cost " << cost);
        checkDecision(limiter.tryAcquire(key, cost), oracle.decide(key, cost, now));
      }
      CHECK(swl::test::logLayoutProblem(connection, prefix + ":" + key) == "");
      leave_times.push_back(oracle.lastLeaves(key) - burst / 2);
    } else if (op < 12) {
      const std::int64_t cost = smallCost();
      INFO("cost " << cost);
      checkDecision(limiter.tryAcquire(key, cost), oracle.decide(key, cost, now));
      leave_times.push_back(oracle.lastLeaves(key));
    } else if (op < 15) {
      const std::int64_t estimate = smallCost();
      const swl::Reservation reservation = limiter.reserve(key, estimate);
      checkDecision(reservation.decision, oracle.decide(key, estimate, now, static_cast<int>(receipts.size())));
      receipts.push_back(reservation.receipt);
      leave_times.push_back(oracle.lastLeaves(key));
    } else if (op < 18 && !receipts.empty()) {
      const int receipt = std::uniform_int_distribution<int>(0, static_cast<int>(receipts.size()) - 1)(random);
      const std::int64_t actual = std::uniform_int_distribution<std::int64_t>(0, 6)(random);
      INFO("settle receipt " << receipt << " at " << actual);
      CHECK(limiter.settle(receipts[receipt], actual) == (receipts[receipt] && oracle.settle(receipt, actual, now)));
    } else {
      checkUsage(limiter.peek(key), oracle.peek(key, now));
    }
    if (step % 100 == 99) {
      for (const std::string& each : keys) CHECK(swl::test::logLayoutProblem(connection, prefix + ":" + each) == "");
    }
  }
}

TEST_CASE_METHOD(ManualTime,
                 "a window of 70,000 entries: counts and waits exact through every level of sums, and while "
                 "most of it has slid out") {
  // Entries of 1, 2 and 3 units, 1 us apart (one clock reading: each is recorded after the newest).
  const std::int64_t window = std::chrono::microseconds(60s).count();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{1'000'000'000, 60s}, options);
  const std::int64_t start = clock.now().count();
  constexpr int kEntries = 70'000;
  std::vector<std::int64_t> units(kEntries);
  std::vector<swl::AcquireRequest> batch;
  for (int i = 0; i < kEntries; ++i) {
    units[i] = 1 + i % 3;
    batch.push_back({"k", units[i]});
    if (batch.size() == 1000) {
      for (const swl::Outcome& outcome : limiter.tryAcquireMany(batch)) REQUIRE(outcome.value().allowed);
      batch.clear();
    }
  }
  REQUIRE(swl::test::logLayoutProblem(connection, "swl:k") == "");
  // At `now`, what the window holds and when its `needed`-th oldest unit leaves.
  const auto held = [&](std::int64_t now) {
    std::int64_t sum = 0;
    for (int i = 0; i < kEntries; ++i) sum += start + i > now - window ? units[i] : 0;
    return sum;
  };
  const auto leaves = [&](std::int64_t now, std::int64_t needed) {
    for (int i = 0; i < kEntries; ++i) {
      if (start + i <= now - window) continue;
      needed -= units[i];
      if (needed <= 0) return std::chrono::microseconds(start + i + window - now);
    }
    return std::chrono::microseconds(-1);
  };
  // The bookkeeping member (rank 0) renamed, at its score.
  const auto renameBookkeeping = [&](const std::string& from, const std::string& to) {
    const std::string score = swl::test::textReply(connection, {"ZSCORE", "swl:k", from});
    REQUIRE(swl::test::integerReply(connection, {"ZREM", "swl:k", from}) == 1);
    REQUIRE(swl::test::integerReply(connection, {"ZADD", "swl:k", score, to}) == 1);
  };
  for (const std::int64_t slid : {0, 1, 9, 1'000, 35'000, 65'537, 69'990}) {
    const std::int64_t now = start + window + slid - 1;  // entries 0..slid-1 have left
    clock.set(std::chrono::microseconds(now));
    INFO(slid << " entries slid out");
    const std::int64_t used = held(now);
    const auto decide = [&] {
      CHECK(limiter.peek("k").used == used);
      for (const std::int64_t cost : {std::int64_t{1}, std::int64_t{2}, used / 2, used - 1, used}) {
        INFO("cost " << cost);
        const swl::Decision refused = limiter.tryAcquire("k", cost, swl::Limit{used, 60s});
        CHECK_FALSE(refused.allowed);
        CHECK(refused.retry_after == leaves(now, cost));
      }
      CHECK(swl::test::logLayoutProblem(connection, "swl:k") == "");
    };
    decide();
    // The same set with a bookkeeping member of another layout (0.3 wrote 13 doubles, and nodes named
    // without their level): the first call numbers its entries afresh, and decides as before.
    const swl::Reply lowest = connection.command({"ZRANGE", "swl:k", "0", "0"});
    const std::string book((*lowest)[0].text());
    REQUIRE(book.size() == 1 + 15 * 8);
    renameBookkeeping(book, book.substr(0, 1 + 13 * 8));
    INFO("bookkeeping of 0.3");
    decide();
  }
}

TEST_CASE_METHOD(ManualTime,
                 "random traces: the bucketed window never admits what the exact window refuses, and admits all "
                 "that a window one bucket longer admits") {
  const bool counted = GENERATE(false, true);
  const std::uint64_t seed = GENERATE(1, 2, 3);
  INFO("seed " << seed << (counted ? ", refusals counted" : ", refusals free"));
  std::mt19937_64 random(seed);

  constexpr unsigned kBuckets = 8;
  const swl::Limit limit{40, 60s};
  const std::int64_t window = limit.window.count();
  const std::int64_t width = swl::BucketedWindow<kBuckets>::bucketWidth(limit.window).count();
  REQUIRE(width == (window + kBuckets - 2) / (kBuckets - 1));
  options.rejected = counted ? swl::RejectedRequests::counted : swl::RejectedRequests::not_counted;
  swl::BucketedWindowLimiter<kBuckets> limiter(connection, limit, options, swl::PrefixKey("b" + std::to_string(seed)));

  // The rule the script keeps: a request counts until its bucket's end plus the window.
  const auto bucket_end = [&](std::int64_t at) { return (at / width + 1) * width; };
  Oracle model(
      limit, counted, [&](std::int64_t at) { return bucket_end(at) + window; }, false);

  std::vector<std::int64_t> leave_times;
  std::int64_t now = clock.now().count();
  int refused_by_rounding = 0;
  for (int step = 0; step < 1500; ++step) {
    now = nextNow(random, now, window, leave_times);
    clock.set(Micros(now));
    const std::string& key = kKeys[std::uniform_int_distribution<std::size_t>(0, kKeys.size() - 1)(random)];
    const int op = std::uniform_int_distribution<int>(0, 19)(random);
    INFO("step " << step << ", op " << op << ", key " << key << ", now " << now);
    if (op < 17) {
      const std::int64_t cost = randomCost(random, limit.max_requests);
      INFO("cost " << cost);
      // The bounds, on the same recorded requests: the exact window and one a bucket longer.
      const std::int64_t exact = model.unitsWithin(key, now, window);
      const std::int64_t longer = model.unitsWithin(key, now, window + width);
      const swl::Decision decision = limiter.tryAcquire(key, cost);
      checkDecision(decision, model.decide(key, cost, now));
      if (decision.allowed) CHECK(exact + cost <= limit.max_requests);   // never over-admits
      if (longer + cost <= limit.max_requests) CHECK(decision.allowed);  // under-admits by a bucket at most
      if (!decision.allowed && exact + cost <= limit.max_requests) ++refused_by_rounding;
      leave_times.push_back(bucket_end(now) + window);
    } else if (op < 19) {
      checkUsage(limiter.peek(key), model.peek(key, now));
    } else {
      limiter.reset(key);
      model.reset(key);
    }
  }
  CHECK(refused_by_rounding > 0);  // the traces reach the bound's edge, where rounding refuses
}

TEST_CASE_METHOD(ManualTime, "random traces: a MultiLimiter agrees with an exact oracle per rule, all or nothing") {
  const bool counted = GENERATE(false, true);
  const std::uint64_t seed = GENERATE(1, 2);
  INFO("seed " << seed << (counted ? ", refusals counted" : ", refusals free"));
  std::mt19937_64 random(seed);

  const std::vector<swl::Rule> rules = {{"short", {8, 10s}}, {"long", {20, 60s}}};
  options.rejected = counted ? swl::RejectedRequests::counted : swl::RejectedRequests::not_counted;
  swl::MultiLimiter<> limiter(connection, rules, options, "multi" + std::to_string(seed));
  std::vector<Oracle> oracles;
  for (const swl::Rule& rule : rules) {
    const std::int64_t window = rule.limit.window.count();
    oracles.emplace_back(rule.limit, counted, [window](std::int64_t at) { return at + window; });
  }

  std::vector<std::int64_t> leave_times;
  std::int64_t now = clock.now().count();
  for (int step = 0; step < 1000; ++step) {
    now = nextNow(random, now, 10'000'000, leave_times);
    clock.set(Micros(now));
    const std::string& key = kKeys[std::uniform_int_distribution<std::size_t>(0, kKeys.size() - 1)(random)];
    const std::int64_t cost = randomCost(random, 8, step % 2 == 0);
    INFO("step " << step << ", key " << key << ", cost " << cost << ", now " << now);
    bool every_rule_fits = true;
    for (const Oracle& oracle : oracles) every_rule_fits = every_rule_fits && oracle.fits(key, cost, now);
    const swl::MultiDecision decision = limiter.tryAcquire({key, key}, cost);
    CHECK(decision.decision.allowed == every_rule_fits);
    for (std::size_t rule = 0; rule < rules.size(); ++rule) {
      INFO("rule " << rules[rule].name);
      checkDecision(decision.rules[rule], oracles[rule].decideAs(key, cost, now, every_rule_fits || counted));
      leave_times.push_back(now + rules[rule].limit.window.count());
    }
  }
}

TEST_CASE_METHOD(ManualTime, "one request of 5,000 and then requests of one unit are counted exactly at every level") {
  // Issue 36: the sums drifted one unit high per 256 one-unit entries, and calls failed past 4,096.
  const swl::Limit limit{1'000'000, 60s};
  swl::SlidingWindowLimiter<> limiter(connection, limit, options);
  const std::vector<std::int64_t> checkpoints{255,   256,   257,    300,    1'000,  4'096,
                                              4'097, 5'000, 20'000, 65'536, 65'537, 70'000};
  const auto expectCounted = [&](std::int64_t requests) {
    INFO(requests << " requests of one unit");
    const swl::Usage usage = limiter.peek("k");
    CHECK(usage.used == 5'000 + requests);
    CHECK(usage.remaining == limit.max_requests - 5'000 - requests);
    CHECK_FALSE(limiter.tryAcquire("k", limit.max_requests - 5'000 - requests + 1).allowed);
  };
  REQUIRE(limiter.tryAcquire("k", 5'000).allowed);
  SECTION("one at a time, one microsecond apart, then in batches") {
    std::int64_t requests = 0;
    for (const std::int64_t checkpoint : checkpoints) {
      while (requests < checkpoint && requests < 1'000) {
        clock.advance(1us);
        REQUIRE(limiter.tryAcquire("k").allowed);
        ++requests;
      }
      if (requests < checkpoint) {
        const std::vector<swl::AcquireRequest> batch(static_cast<std::size_t>(checkpoint - requests), {"k", 1});
        for (const swl::Outcome& outcome : limiter.tryAcquireMany(batch)) REQUIRE(outcome.decision.allowed);
        requests = checkpoint;
      }
      expectCounted(requests);
    }
  }
  SECTION("all at one instant, in batches") {
    std::int64_t requests = 0;
    for (const std::int64_t checkpoint : checkpoints) {
      const std::vector<swl::AcquireRequest> batch(static_cast<std::size_t>(checkpoint - requests), {"k", 1});
      for (const swl::Outcome& outcome : limiter.tryAcquireMany(batch)) REQUIRE(outcome.decision.allowed);
      requests = checkpoint;
      expectCounted(requests);
    }
  }
  const swl::LogCheck check = limiter.checkLog("k");
  CHECK(check.counted_by_units);
  CHECK(check.nodes == std::array<std::int64_t, 4>{1, 1, 1, 1});  // only the nodes holding the 5,000 sum to more
}

TEST_CASE_METHOD(ManualTime, "a MultiLimiter whose rules see one request of 5,000 first counts each rule exactly") {
  swl::MultiLimiter<> limiter(connection,
                              {{"second", swl::Limit{1'000'000, 1s}}, {"minute", swl::Limit{2'000'000, 60s}}}, options);
  REQUIRE(limiter.tryAcquire({"k", "k"}, 5'000).decision.allowed);
  for (std::int64_t requests = 1; requests <= 4'200; ++requests) {
    clock.advance(1us);
    const swl::MultiDecision decision = limiter.tryAcquire({"k", "k"}, 1);
    REQUIRE(decision.decision.allowed);
    if (requests % 256 == 0 || requests % 256 == 1 || requests == 4'200) {
      INFO(requests << " requests of one unit");
      CHECK(decision.rules[0].remaining == 1'000'000 - 5'000 - requests);
      CHECK(decision.rules[1].remaining == 2'000'000 - 5'000 - requests);
    }
  }
}

TEST_CASE_METHOD(ManualTime,
                 "settle refunds, charges past the limit, settles once, and leaves a slid-out reservation") {
  const auto start = clock.now();
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10'000, 60s}, options);

  SECTION("a refund gives back the difference at once, and the rest leaves at the reservation's time") {
    const swl::Reservation reservation = limiter.reserve("k", 4'000);
    REQUIRE(reservation);
    CHECK(reservation.decision.remaining == 6'000);
    clock.advance(2s);
    CHECK(limiter.settle(reservation.receipt, 1'200));
    CHECK(limiter.peek("k").used == 1'200);
    CHECK(limiter.tryAcquire("k", 8'800).allowed);
    const swl::Decision full = limiter.tryAcquire("k", 1);
    CHECK_FALSE(full.allowed);
    CHECK(full.retry_after == 58s);  // the settled 1,200 leave with the reservation, at start + 60 s
    CHECK(logEntries(connection, "swl:k") == 2);
  }
  SECTION("an excess is charged even past the limit: the units were spent") {
    const swl::Reservation reservation = limiter.reserve("k", 9'000);
    CHECK(limiter.settle(reservation.receipt, 12'500));
    const swl::Usage usage = limiter.peek("k");
    CHECK(usage.used == 12'500);
    CHECK(usage.remaining == 0);
    const swl::Decision refused = limiter.tryAcquire("k", 1);
    CHECK_FALSE(refused.allowed);
    CHECK(refused.retry_after == 60s);
    clock.set(start + 60s);
    CHECK(limiter.tryAcquire("k", 10'000).allowed);
  }
  SECTION("settling twice changes nothing the second time") {
    const swl::Reservation reservation = limiter.reserve("k", 4'000);
    CHECK(limiter.settle(reservation.receipt, 1'000));
    CHECK_FALSE(limiter.settle(reservation.receipt, 1'000));
    CHECK_FALSE(limiter.settle(reservation.receipt, 3'000));
    CHECK(limiter.peek("k").used == 1'000);
  }
  SECTION("a reservation settled at 0 is taken back whole, keeps its place, and leaves nothing to wait for") {
    const swl::Reservation older = limiter.reserve("k", 1'000);
    clock.advance(5s);
    const swl::Reservation reservation = limiter.reserve("k", 4'000);
    CHECK(limiter.settle(reservation.receipt, 0));
    // The window empties when the older reservation leaves, in 55 s; the one of no units holds nothing.
    CHECK(limiter.peek("k").reset_after == 55s);
    CHECK(limiter.settle(older.receipt, 0));
    const swl::Usage usage = limiter.peek("k");
    CHECK(usage.used == 0);
    CHECK(usage.remaining == 10'000);
    CHECK(usage.reset_after == 0us);
    CHECK(logEntries(connection, "swl:k") == 2);
    clock.advance(1s);
    const swl::Decision whole = limiter.tryAcquire("k", 10'000);
    CHECK(whole.allowed);
    CHECK(whole.reset_after == 60s);
  }
  SECTION("a reservation that left the window is left alone; one never settled ages out") {
    const swl::Reservation settled_late = limiter.reserve("k", 4'000);
    const swl::Reservation never_settled = limiter.reserve("k", 3'000);  // recorded 1 us later, at start + 1 us
    clock.set(start + 60s);
    CHECK(limiter.peek("k").used == 3'000);
    clock.set(start + 60s + 1us);  // the entries are still in the set, but no longer in the window
    CHECK_FALSE(limiter.settle(settled_late.receipt, 9'000));
    CHECK(limiter.peek("k").used == 0);
    CHECK(limiter.tryAcquire("k", 10'000).allowed);
    CHECK(logEntries(connection, "swl:k") == 1);
    CHECK(never_settled);
  }
  SECTION("a refused reservation carries no receipt, and settling it does nothing") {
    limiter.tryAcquire("k", 10'000);
    const swl::Reservation refused = limiter.reserve("k", 1);
    CHECK_FALSE(refused);
    CHECK_FALSE(refused.receipt);
    CHECK_FALSE(limiter.settle(refused.receipt, 1));
    CHECK(limiter.peek("k").used == 10'000);
  }
  SECTION("a negative or unrepresentable actual cost is refused with a named reason") {
    const swl::Reservation reservation = limiter.reserve("k", 10);
    CHECK_THROWS_MATCHES(
        limiter.settle(reservation.receipt, -1), swl::InvalidArgument,
        Catch::Matchers::Message("swl::SlidingWindowLimiter::settle: -1 units are not in 0..2^53-1 (key 'swl:k')"));
    CHECK(limiter.peek("k").used == 10);
  }
}

TEST_CASE_METHOD(ManualTime, "a reservation refused while rejections count was recorded, so its receipt settles it") {
  swl::LimiterOptions counted = options;
  counted.rejected = swl::RejectedRequests::counted;
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s}, counted);
  REQUIRE(limiter.tryAcquire("k", 10).allowed);
  const swl::Reservation refused = limiter.reserve("k", 4);
  CHECK_FALSE(refused);
  REQUIRE(refused.receipt);  // was empty: an entry of 4 units no one could settle
  CHECK(refused.receipt.units == 4);
  CHECK(limiter.peek("k").used == 14);
  CHECK(limiter.settle(refused.receipt, 0));  // the refused call spent nothing: take the penalty back
  CHECK(limiter.peek("k").used == 10);
}

TEST_CASE_METHOD(ManualTime, "a cost of 10^9 under a limit of 2^40 is one entry, decided like a cost of one") {
  const std::int64_t limit = std::int64_t{1} << 40;
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{limit, 60s}, options);
  for (int i = 1; i <= 3; ++i) {
    const swl::Decision decision = limiter.tryAcquire("tokens", 1'000'000'000);
    CHECK(decision.allowed);
    CHECK(decision.remaining == limit - i * std::int64_t{1'000'000'000});
    clock.advance(1ms);
  }
  CHECK(logEntries(connection, "swl:tokens") == 3);
  const swl::Decision whole = limiter.tryAcquire("tokens", limit);
  CHECK_FALSE(whole.allowed);
  CHECK(whole.retry_after == 60s - 1ms);  // all three must leave: the last, 1 ms ago, at its time + 60 s
}

// Writes Redis made since it started (each write, not each script): INFO's changes since the last save,
// which the test servers never make.
long long writesSoFar(swl::Connection& connection) {
  return swl::test::infoCounter(connection, "persistence", "rdb_changes_since_last_save:");
}

TEST_CASE_METHOD(ManualTime,
                 "a refusal or a peek writes nothing to a weighted window, however many of its entries slid out") {
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, 1s}, options);
  for (int i = 0; i < 40; ++i) REQUIRE(limiter.tryAcquire("k", 2).allowed);  // 80 units, 1 us apart
  clock.advance(1s + 19us);  // the 20 oldest entries slid out: 40 units are left
  const long long before = writesSoFar(connection);
  const swl::Decision refused = limiter.tryAcquire("k", 61);
  CHECK_FALSE(refused.allowed);
  CHECK(refused.remaining == 60);
  CHECK(refused.retry_after == 1us);  // one unit has to leave: the oldest entry left, 1 us after the last that slid out
  CHECK(limiter.peek("k").used == 40);
  CHECK(writesSoFar(connection) == before);
  CHECK(logEntries(connection, "swl:k") == 40);  // those that slid out still there, as they were
  // The next admission takes up to 8 of them with it.
  CHECK(limiter.tryAcquire("k", 3).allowed);
  CHECK(logEntries(connection, "swl:k") == 33);
  CHECK(swl::test::logLayoutProblem(connection, "swl:k") == "");
}

TEST_CASE_METHOD(ManualTime, "a key hit after its whole window slid out starts afresh: its set goes at once") {
  const bool weighted = GENERATE(false, true);
  const bool multi = GENERATE(false, true);
  INFO((weighted ? "entries of 2 units" : "entries of 1 unit") << (multi ? ", a MultiLimiter's rule" : ""));
  const swl::Limit limit{1000, 1s};
  swl::SlidingWindowLimiter<> limiter(connection, limit, options);
  swl::MultiLimiter<> rules(connection, {{"second", limit}}, options);
  const std::string key = multi ? rules.redisKey(0, "k") : limiter.redisKey("k");
  const auto acquire = [&](std::int64_t cost) {
    return multi ? rules.tryAcquire({"k"}, cost).decision : limiter.tryAcquire("k", cost);
  };
  for (int i = 0; i < 500; ++i) REQUIRE(acquire(weighted ? 2 : 1).allowed);
  clock.advance(2s);
  const swl::Decision first = acquire(3);
  CHECK(first.allowed);
  CHECK(first.remaining == 997);
  // The new entry and its bookkeeping member: no entry that slid out, no sum over them.
  CHECK(integerReply(connection, {"ZCARD", key}) == 2);
  CHECK(logEntries(connection, key) == 1);
  CHECK(swl::test::logLayoutProblem(connection, key) == "");
  CHECK(acquire(997).allowed);
  CHECK_FALSE(acquire(1).allowed);
}

TEST_CASE_METHOD(ManualTime, "a lease on a key whose whole window slid out starts it afresh too") {
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{1000, 1s}, options);
  for (int i = 0; i < 500; ++i) REQUIRE(limiter.tryAcquire("k", 2).allowed);
  clock.advance(2s);
  swl::detail::LeaseTerms terms;
  terms.units = 40;
  terms.duration = 10ms;
  const swl::detail::LeaseGrant lease = limiter.lease("k", 1, terms);
  CHECK(lease.decision.allowed);
  CHECK(lease.receipt.units == 40);
  CHECK(lease.decision.remaining == 960);
  CHECK(integerReply(connection, {"ZCARD", "swl:k"}) == 2);  // the lease's entry and its bookkeeping
  CHECK(swl::test::logLayoutProblem(connection, "swl:k") == "");
}

TEST_CASE_METHOD(ManualTime,
                 "a key written one member per unit (before 0.2) is counted as it was, then kept as a sum") {
  const std::int64_t now = clock.now().count();
  for (int unit = 0; unit < 3; ++unit) {
    integerReply(connection, {"ZADD", "swl:old", std::to_string(now - 1000), "unit" + std::to_string(unit)});
  }
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 1s}, options);
  CHECK(limiter.peek("old").used == 3);
  const swl::Decision decision = limiter.tryAcquire("old", 2);
  CHECK(decision.allowed);
  CHECK(decision.remaining == 0);
  CHECK_FALSE(limiter.tryAcquire("old").allowed);
  clock.advance(1s - 1000us);
  CHECK(limiter.tryAcquire("old", 3).allowed);  // the three old units left together
}

TEST_CASE_METHOD(ManualTime,
                 "a member policy that writes the log's marks is refused before anything is sent, by every limiter "
                 "that writes the log") {
  struct Starred {
    std::string next() { return "a*2"; }
  };
  struct Spaced {
    std::string next() { return "a b"; }
  };
  swl::RedisLimiter<swl::SlidingWindowLog, swl::PrefixKey, Starred> limiter(connection, swl::Limit{5, 1s}, options);
  CHECK_THROWS_WITH(limiter.tryAcquire("k"), Catch::Contains("'a*2'"));
  swl::SlidingWindowLimiter<swl::PrefixKey, Spaced> spaced(connection, swl::Limit{5, 1s}, options);
  CHECK_THROWS_AS(spaced.reserve("k", 2), swl::InvalidArgument);
  swl::MultiLimiter<swl::PrefixKey, Starred> multi(connection, {{"second", swl::Limit{5, 1s}}}, options);
  CHECK_THROWS_WITH(multi.tryAcquire({"k"}, 3), Catch::Contains("swl::MultiLimiter"));
  CHECK_THROWS_AS(multi.tryAcquire({"k"}, 3), swl::InvalidArgument);
  swl::ShardedLimiter<swl::SlidingWindowLog, Starred> sharded(connection, swl::Limit{6, 1s}, options,
                                                              swl::Sharding(2, "sharded"));
  CHECK_THROWS_AS(sharded.tryAcquire("k"), swl::InvalidArgument);
  swl::LeasingLimiter<swl::PrefixKey, Starred> leasing(connection, swl::Limit{5, 1s}, options, {},
                                                       swl::PrefixKey("leasing"));
  CHECK_THROWS_AS(leasing.tryAcquire("k"), swl::InvalidArgument);
  swl::TieredLimiter<swl::SlidingWindowLimiter<swl::PrefixKey, Starred>> tiered(connection, swl::Limit{5, 1s}, options);
  CHECK_THROWS_AS(tiered.tryAcquire("k"), swl::InvalidArgument);
  CHECK(integerReply(connection, {"DBSIZE"}) == 0);  // nothing was sent
}

TEST_CASE_METHOD(ManualTime, "a day of 70,000 requests in the bucketed window is at most B + 4 fields, all admitted") {
  swl::BucketedWindowLimiter<64> limiter(connection, swl::Limit{70'000, 24h}, options);
  const Micros step = Micros(24h) / 70'000;
  int admitted = 0;
  for (int i = 0; i < 70'000; ++i) {
    admitted += limiter.tryAcquire("daily").allowed;
    clock.advance(step);
  }
  CHECK(admitted == 70'000);
  CHECK(integerReply(connection, {"HLEN", "swl:daily"}) <= 64 + 4);  // the buckets, and s, o, n and w
  CHECK(limiter.peek("daily").used == 70'000);
}

TEST_CASE_METHOD(ManualTime, "the bucketed window keeps a key alive while its last bucket still counts") {
  swl::BucketedWindowLimiter<4> limiter(connection, swl::Limit{3, 30s}, options);
  const Micros width = swl::BucketedWindow<4>::bucketWidth(30s);
  CHECK(width == 10s);
  CHECK(limiter.tryAcquire("k").reset_after > 30s);  // its bucket's end plus the window
  const long long ttl = integerReply(connection, {"PTTL", "swl:k"});
  CHECK(ttl > 30'000);
  CHECK(ttl <= 40'000);
}
