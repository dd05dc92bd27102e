// The worst a call can cost Redis, in one run on one private redis-server: adversarial calls for every
// algorithm and composite, each timed by Redis itself (SLOWLOG with a threshold of 0: the microseconds
// the server spent executing that one EVALSHA), reported as the median and the maximum over the
// scenario's calls and as their ratios to a cost-1 admitted decision of the same run.
//
//   build-bench/bench/worst_case [largest window in entries = 100000] [module]
//
// Windows of 10^3 to the largest number of entries (10^5 by default) are built through the limiters
// themselves (pipelined batches) on a manual clock, so every run sees the same sets. The baseline is
// SlidingWindowLimiter<> on Redis's clock: cost 1, admitted (bench/script_cost's admitted case), sent one
// call at a time as every adversarial call is. The goal (issue: "No call may cost Redis much more than a
// decision"): every adversarial call at most 5x the baseline, 3x aimed for.
//
// Where the module is built (module/, -DSWL_MODULE_SOURCE), a second table: the log's decisions again on
// a server that loaded it, so that the library sends them as SWL.DECIDE, against the module's own cost-1
// decision (issue 53: its worst call within 5x of one of its decisions). Settles, leases and the other
// algorithms stay scripts, measured in the first table. `module` prints the second table alone.

#include <swl/swl.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Micros = std::chrono::microseconds;

// Redis's own time for each decision or script call (EVALSHA or SWL.DECIDE) that `calls` sends, from the
// slow log.
std::vector<long long> timedByRedis(swl::Connection& connection, const std::function<void()>& calls) {
  swl::test::textReply(connection, {"SLOWLOG", "RESET"});
  calls();
  const swl::Reply log = connection.command({"SLOWLOG", "GET", "-1"});
  std::vector<long long> durations;
  for (std::size_t i = 0; i < log->size(); ++i) {
    const swl::ReplyView entry = (*log)[i];
    if (entry.size() < 4 || entry[3].size() == 0) continue;
    std::string command(entry[3][0].text());
    std::transform(command.begin(), command.end(), command.begin(), ::toupper);
    if (command == "EVALSHA" || command == "SWL.DECIDE") durations.push_back(entry[2].integer());
  }
  return durations;
}

struct Row {
  std::string scenario;
  std::vector<long long> durations;
  int decisions = 1;        // a MultiLimiter call makes one per rule, and is held to about one decision's cost each
  bool adversarial = true;  // false for the baselines: the worst is named among the others
  // For a first call on a key whose set is not in the CPU's caches: the row of a cost-1 decision that is a
  // first call on such a key too, which shows what the cold set costs and what the call's own work does.
  std::optional<std::size_t> cold_reference;
};

double median(std::vector<long long> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return static_cast<double>(values[values.size() / 2]);
}

long long maximum(const std::vector<long long>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

// Requests for `key` of `cost` units, `count` of them, sent in pipelined batches (the clock as it is).
template <class Limiter>
void fill(Limiter& limiter, const std::string& key, std::int64_t cost, long count) {
  std::vector<swl::AcquireRequest> batch;
  for (long done = 0; done < count;) {
    batch.clear();
    for (; done < count && batch.size() < 1000; ++done) batch.push_back({key, cost});
    limiter.tryAcquireMany(batch);
  }
}

class Bench {
 public:
  // On a server that loaded `module` when it names one.
  Bench(long largest, const std::string& module)
      : largest_(largest),
        module_(!module.empty()),
        server_(module_ ? std::vector<std::string>{"--loadmodule", module} : std::vector<std::string>{}) {
    swl::test::textReply(connection_, {"CONFIG", "SET", "slowlog-log-slower-than", "0"});
    swl::test::textReply(connection_, {"CONFIG", "SET", "slowlog-max-len", "200000"});
    options_.clock = swl::Clock::manual(clock_);
  }

  void run() {
    pipelinedBaseline();
    if (module_) return runDecisions();
    for (long entries = 1000; entries <= largest_; entries *= 10) {
      baselineSlice();
      refusalsOnWeightedWindows(entries);
      countedFloods(entries);
      settles(entries);
      leases(entries);
      slidOut(entries);
      blocks(entries);
    }
    multiOfNineRules(std::min<long>(largest_, 10'000));
    otherAlgorithms();
    periods();
    concurrency();
    baselineSlice();
    print();
  }

 private:
  // With the module: the log's decisions alone (what it decides).
  void runDecisions() {
    for (long entries = 1000; entries <= largest_; entries *= 10) {
      baselineSlice();
      refusalsOnWeightedWindows(entries);
      countedFloods(entries);
      slidOut(entries);
    }
    baselineSlice();
    print();
  }

  void record(std::string scenario, std::vector<long long> durations, int decisions = 1, bool adversarial = true) {
    rows_.push_back({std::move(scenario), std::move(durations), decisions, adversarial, {}});
  }

  // A first call on a cold set, set also against `reference` (a row recorded before).
  void recordFirstCall(std::string scenario, std::vector<long long> durations, std::size_t reference) {
    rows_.push_back({std::move(scenario), std::move(durations), 1, true, reference});
  }

  void reset() {
    swl::test::textReply(connection_, {"FLUSHALL"});
    clock_.set(std::chrono::seconds(1'700'000'000));
  }

  // Cost 1, admitted, on Redis's clock: the decision every other figure is measured against. It is sent
  // one call at a time, as every adversarial call below is (a call that arrives alone finds Redis's
  // caches colder than one in a pipeline), 1,000 keys twice, in slices before each size of window and
  // at the end, so that what the machine does meanwhile weighs on it as on the calls it measures.
  void baselineSlice() {
    reset();
    swl::SlidingWindowLimiter<> limiter(connection_, swl::Limit{1'000'000, 60s});
    fill(limiter, "warm", 1, 1);  // the script is loaded
    const std::vector<long long> slice = timedByRedis(connection_, [&] {
      for (int call = 0; call < 2'000; ++call) limiter.tryAcquire("base:" + std::to_string(call % 1'000));
    });
    base_.insert(base_.end(), slice.begin(), slice.end());
  }

  // For scale: the same decision pipelined, as bench/script_cost measures it.
  void pipelinedBaseline() {
    reset();
    swl::SlidingWindowLimiter<> limiter(connection_, swl::Limit{1'000'000, 60s});
    std::vector<std::string> keys;  // a request views its key: the keys outlive the batch
    for (int key = 0; key < 10'000; ++key) keys.push_back("pipelined:" + std::to_string(key));
    std::vector<swl::AcquireRequest> batch;
    for (const std::string& key : keys) batch.push_back({key});
    fill(limiter, "warm", 1, 1);
    record("for scale: the same, 10,000 keys pipelined (tryAcquireMany)",
           timedByRedis(connection_,
                        [&] {
                          for (int round = 0; round < 2; ++round) limiter.tryAcquireMany(batch);
                        }),
           1, false);
  }

  // Windows of `entries` entries of 2 units, full (limit 2 x entries), refusing costs 1, limit / 2 and
  // limit; with and without '#'-weighted entries at the start.
  void refusalsOnWeightedWindows(long entries) {
    reset();
    const std::int64_t limit = 2 * entries;
    swl::SlidingWindowLimiter<> limiter(connection_, swl::Limit{limit, 600s}, options_);
    fill(limiter, "w", 2, entries);
    clock_.advance(1s);
    for (const std::int64_t cost : {std::int64_t{1}, limit / 2, limit}) {
      record(label("refusal of cost " + costName(cost, limit) + ", weighted window", entries),
             timedByRedis(connection_, [&] {
               for (int i = 0; i < 200; ++i) limiter.tryAcquire("w", cost);
             }));
    }
  }

  // Refusals that record: a flood of cost limit / 2 on a full weighted window, and a flood of cost 1 on a
  // window of one-unit entries and one of 2 units (the window counted by units for a single entry).
  void countedFloods(long entries) {
    reset();
    swl::LimiterOptions counted = options_;
    counted.rejected = swl::RejectedRequests::counted;
    const std::int64_t limit = 2 * entries;
    swl::SlidingWindowLimiter<> weighted(connection_, swl::Limit{limit, 600s}, counted);
    fill(weighted, "w", 2, entries);
    clock_.advance(1s);
    record(label("counted refusal of cost limit/2, weighted window", entries), timedByRedis(connection_, [&] {
             for (int i = 0; i < 500; ++i) weighted.tryAcquire("w", limit / 2);
           }));
    swl::SlidingWindowLimiter<> mixed(connection_, swl::Limit{entries, 600s}, counted);
    fill(mixed, "m", 1, entries - 2);
    mixed.tryAcquire("m", 2);
    record(label("counted refusal of cost 1, one-unit window + one of 2", entries), timedByRedis(connection_, [&] {
             for (int i = 0; i < 500; ++i) mixed.tryAcquire("m", 1);
           }));
  }

  // Reservations settled at random (refunds, charges, 0), in a window of `entries` reservations.
  void settles(long entries) {
    reset();
    swl::SlidingWindowLimiter<> limiter(connection_, swl::Limit{8 * entries, 600s}, options_);
    std::vector<swl::Receipt> receipts;
    for (long i = 0; i < entries; ++i) {
      const swl::Reservation reservation = limiter.reserve("r", 4);
      if (reservation) receipts.push_back(reservation.receipt);
    }
    std::mt19937_64 random(7);
    std::shuffle(receipts.begin(), receipts.end(), random);
    record(label("settle (refund, charge, 0)", entries), timedByRedis(connection_, [&] {
             for (std::size_t i = 0; i < std::min<std::size_t>(500, receipts.size()); ++i) {
               limiter.settle(receipts[i], static_cast<std::int64_t>(i % 9));
             }
           }));
  }

  // Leases scored ahead of now, each giving the previous back, on a window of `entries` entries.
  void leases(long entries) {
    reset();
    const std::int64_t limit = 4 * entries;
    swl::SlidingWindowLimiter<> limiter(connection_, swl::Limit{limit, 600s}, options_);
    fill(limiter, "l", 2, entries);
    swl::detail::LeaseTerms terms;
    terms.units = 64;
    terms.duration = 10ms;
    record(label("lease ahead of now, the previous given back", entries), timedByRedis(connection_, [&] {
             for (int i = 0; i < 300; ++i) {
               const swl::detail::LeaseGrant lease = limiter.lease("l", 1, terms);
               terms.previous = lease.receipt;
               terms.previous_used = lease.receipt.units / 2;
               clock_.advance(1ms);
             }
           }));
    // Leases of 4 units given back on their own (LeasingLimiter::giveBack), on a window like the first.
    fill(limiter, "g", 2, entries);
    terms.previous = {};
    terms.units = 4;
    std::vector<swl::Receipt> given;
    for (int i = 0; i < 300; ++i) {
      given.push_back(limiter.lease("g", 1, terms).receipt);
      clock_.advance(1ms);
    }
    record(label("giveBack", entries), timedByRedis(connection_, [&] {
             for (const swl::Receipt& lease : given) limiter.giveBack(lease, 1);
           }));
  }

  // Keys hit after their whole window slid out, and after half of a burst slid out (five keys each, one
  // call per key: every call is a first one).
  void slidOut(long entries) {
    reset();
    swl::SlidingWindowLimiter<> limiter(connection_, swl::Limit{4 * entries, 60s}, options_);
    constexpr int kKeys = 5;
    for (int key = 0; key < kKeys; ++key) {
      fill(limiter, "plain" + std::to_string(key), 1, entries);
      fill(limiter, "weighted" + std::to_string(key), 2, entries);
    }
    // One call on each of the keys `prefix`0..4, of `cost`: each is the first call on its key.
    const auto firstCalls = [&](const std::string& prefix, std::int64_t cost) {
      return timedByRedis(connection_, [&] {
        for (int key = 0; key < kKeys; ++key) limiter.tryAcquire(prefix + std::to_string(key), cost);
      });
    };
    // For scale: the first call on such a key while its window still holds them all (its set as cold), a
    // cost-1 decision; the other first calls are set against it too.
    clock_.advance(1s);
    record(label("first call on a key whose window holds them, one-unit entries", entries), firstCalls("plain", 1), 1,
           false);
    const std::size_t cold = rows_.size() - 1;
    clock_.advance(60s);
    recordFirstCall(label("first call after the whole window slid out, one-unit entries", entries),
                    firstCalls("plain", 1), cold);
    recordFirstCall(label("first call after the whole window slid out, weighted entries", entries),
                    firstCalls("weighted", 1), cold);
    reset();
    const auto burst_start = clock_.now();
    for (int key = 0; key < kKeys; ++key) fill(limiter, "burst" + std::to_string(key), 2, entries);
    clock_.advance(1s);
    for (int key = 0; key < kKeys; ++key) limiter.tryAcquire("burst" + std::to_string(key), 2);
    clock_.set(burst_start + 60s + Micros(entries / 2));  // a key's entries are 1 us apart
    recordFirstCall(label("first call after half a burst slid out, weighted entries", entries),
                    firstCalls("burst", 4 * entries), cold);
    record(label("refusals after half a burst slid out, the calls after the first", entries),
           timedByRedis(connection_, [&] {
             for (int call = 0; call < 40; ++call) {
               for (int key = 0; key < kKeys; ++key) limiter.tryAcquire("burst" + std::to_string(key), 4 * entries);
             }
           }));
    // The same windows full (a limit of what each holds), refusing one unit: the wait is the first entry
    // still in the window, right after those that slid out.
    const std::int64_t held = limiter.peek("burst0").used;
    record(label("refusals of cost 1 after half a burst slid out, the window full", entries),
           timedByRedis(connection_, [&] {
             for (int call = 0; call < 40; ++call) {
               for (int key = 0; key < kKeys; ++key) {
                 limiter.tryAcquire("burst" + std::to_string(key), 1, swl::Limit{held, 60s});
               }
             }
           }));
  }

  // Blocking (LimiterOptions::block_for) on a full weighted window: refusals that start a block (a block of
  // 1 ms, over before the next call), and refusals of a blocked key, which decide as a peek does.
  void blocks(long entries) {
    reset();
    const std::int64_t limit = 2 * entries;
    swl::LimiterOptions blocking = options_;
    blocking.block_for = 1ms;
    swl::SlidingWindowLimiter<> briefly(connection_, swl::Limit{limit, 600s}, blocking);
    fill(briefly, "w", 2, entries);
    clock_.advance(1s);
    record(label("refusal of cost limit/2 that blocks the key, weighted window", entries),
           timedByRedis(connection_, [&] {
             for (int i = 0; i < 200; ++i) {
               briefly.tryAcquire("w", limit / 2);
               clock_.advance(2ms);
             }
           }));
    blocking.block_for = 600s;
    swl::SlidingWindowLimiter<> long_block(connection_, swl::Limit{limit, 600s}, blocking);
    long_block.tryAcquire("w", limit / 2);  // blocks "w"
    record(label("refusal of cost limit/2 of a blocked key, weighted window", entries), timedByRedis(connection_, [&] {
             for (int i = 0; i < 200; ++i) long_block.tryAcquire("w", limit / 2);
           }));
  }

  // Nine rules, each over a full weighted window: refusals by the last rule, and admissions.
  void multiOfNineRules(long entries) {
    reset();
    std::vector<swl::Rule> rules;
    for (int i = 0; i < 9; ++i) rules.push_back({"r" + std::to_string(i), swl::Limit{2 * entries + i, 600s}});
    swl::MultiLimiter<> limiter(connection_, rules, options_);
    const std::vector<std::string_view> keys(9, "k");
    for (long i = 0; i < entries; ++i) limiter.tryAcquire(keys, 2);
    clock_.advance(1s);
    record(label("MultiLimiter, 9 weighted rules, refusal of cost limit/2", entries),
           timedByRedis(connection_,
                        [&] {
                          for (int i = 0; i < 200; ++i) limiter.tryAcquire(keys, entries);
                        }),
           9);
    // The common case, for scale: cost 1, admitted, on Redis's clock.
    swl::MultiLimiter<> plain(connection_, rules, {}, "plain");
    const std::vector<std::string_view> fresh(9, "fresh");
    record("MultiLimiter, 9 rules, cost 1 admitted, Redis's clock",
           timedByRedis(connection_,
                        [&] {
                          for (int i = 0; i < 200; ++i) plain.tryAcquire(fresh, 1);
                        }),
           9);
  }

  // The counting algorithms keep a few numbers per key: counted floods of the whole limit.
  void otherAlgorithms() {
    reset();
    swl::LimiterOptions counted = options_;
    counted.rejected = swl::RejectedRequests::counted;
    const swl::Limit limit{1'000'000, 600s};
    swl::FixedWindowLimiter<> fixed(connection_, limit, counted, swl::PrefixKey("fixed"));
    swl::SlidingCounterLimiter<> counter(connection_, limit, counted, swl::PrefixKey("counter"));
    swl::GcraLimiter<> gcra(connection_, limit, options_, swl::PrefixKey("gcra"));
    swl::BucketedWindowLimiter<> bucketed(connection_, limit, counted, swl::PrefixKey("bucketed"));
    const auto flood = [&](auto& limiter) {
      return timedByRedis(connection_, [&] {
        for (int i = 0; i < 300; ++i) {
          limiter.tryAcquire("k", limit.max_requests);
          clock_.advance(2s);  // every bucket of the bucketed window in turn
        }
      });
    };
    record("FixedWindowLimiter, counted flood of cost = limit", flood(fixed));
    record("SlidingCounterLimiter, counted flood of cost = limit", flood(counter));
    record("GcraLimiter, flood of cost = limit", flood(gcra));
    record("BucketedWindowLimiter<64>, counted flood of cost = limit", flood(bucketed));
  }

  // A quota per period (a calendar day, say: the script is the same whatever cuts the periods): a counted
  // flood; and a MultiLimiter of eight weighted rules and a periodic one, refused by the periodic rule.
  void periods() {
    reset();
    const swl::Periods hours("1 hour", 1h, [](Micros at) {
      const Micros start = std::chrono::floor<std::chrono::hours>(at);
      return swl::Period{start, start + 1h};
    });
    swl::LimiterOptions counted = options_;
    counted.rejected = swl::RejectedRequests::counted;
    swl::PeriodicLimiter<> periodic(connection_, 1'000'000, hours, counted);
    record("PeriodicLimiter (a calendar quota), counted flood of cost = limit", timedByRedis(connection_, [&] {
             for (int i = 0; i < 300; ++i) periodic.tryAcquire("k", 1'000'000);
           }));
    const long entries = std::min<long>(largest_, 10'000);
    std::vector<swl::Rule> rules;
    for (int i = 0; i < 8; ++i) rules.push_back({"r" + std::to_string(i), swl::Limit{2 * entries + i, 600s}});
    rules.push_back({"period", 2 * entries - 1, hours});
    swl::MultiLimiter<> limiter(connection_, rules, options_);
    const std::vector<std::string_view> keys(9, "k");
    for (long i = 0; i < entries - 1; ++i) limiter.tryAcquire(keys, 2);
    record(label("MultiLimiter, 8 weighted rules and a periodic one, refusal of cost limit/2", entries),
           timedByRedis(connection_,
                        [&] {
                          for (int i = 0; i < 200; ++i) limiter.tryAcquire(keys, entries);
                        }),
           9);
  }

  // Acquires that find every slot expired: their work is bounded by max_in_flight.
  void concurrency() {
    reset();
    swl::ConcurrencyLimiter<> limiter(connection_, swl::Concurrency{1000, 1s}, options_);
    std::vector<swl::ConcurrencyLimiter<>::Slot> held;
    for (int i = 0; i < 1000; ++i) held.push_back(limiter.tryAcquire("c"));
    clock_.advance(2s);
    record("ConcurrencyLimiter acquire, 1,000 slots expired", timedByRedis(connection_, [&] {
             for (int i = 0; i < 20; ++i) limiter.tryAcquire("c").release();
           }));
    for (auto& slot : held) slot.release();
  }

  static std::string costName(std::int64_t cost, std::int64_t limit) {
    if (cost == 1) return "1";
    return cost == limit ? "limit" : "limit/2";
  }

  static std::string label(const std::string& what, long entries) {
    return what + ", " + std::to_string(entries) + " entries";
  }

  // Each row's median and maximum as ratios to the baseline's median, per decision the call makes. The
  // median is what a call of that shape costs; the maximum also catches what Redis did beside it (the
  // baseline's own maximum is many times its median: rehashing, expiry cycles), so both are reported and
  // the worst of each named: over every adversarial call, over the calls on keys Redis touched lately,
  // and, for first calls on cold sets, against a cost-1 first call on a set as cold.
  void print() const {
    const double base = median(base_);
    std::printf(
        "| call | calls | median us | max us | median / baseline | max / baseline | median / cold first call |\n"
        "|---|--:|--:|--:|--:|--:|--:|\n");
    const Row baseline{
        "baseline: cost 1 admitted, Redis's clock, one call at a time, in slices through the run", base_, 1, false, {}};
    std::vector<const Row*> shown = {&baseline};
    for (const Row& row : rows_) shown.push_back(&row);
    Worst median_of_all, maximum_of_all, median_warm, median_against_cold;
    for (const Row* each : shown) {
      const Row& row = *each;
      const double at_median = median(row.durations) / base / row.decisions;
      const double at_maximum = static_cast<double>(maximum(row.durations)) / base / row.decisions;
      const char* per = row.decisions > 1 ? " per rule" : "";
      std::string against_cold = "-";
      if (row.cold_reference) {
        const double cold = median(row.durations) / median(rows_[*row.cold_reference].durations);
        median_against_cold.consider(cold, row);
        against_cold = std::to_string(cold);
        against_cold.resize(against_cold.find('.') + 3);
      }
      std::printf("| %s | %zu | %.0f | %.0f | %.2f%s | %.2f%s | %s |\n", row.scenario.c_str(), row.durations.size(),
                  median(row.durations), static_cast<double>(maximum(row.durations)), at_median, per, at_maximum, per,
                  against_cold.c_str());
      if (!row.adversarial) continue;
      median_of_all.consider(at_median, row);
      maximum_of_all.consider(at_maximum, row);
      if (!row.cold_reference) median_warm.consider(at_median, row);
    }
    if (!median_of_all.row) return;
    std::printf("\nbaseline median %.0f us (goal: every adversarial call <= 5x, aim 3x)\n", base);
    median_of_all.print("worst median");
    maximum_of_all.print("worst maximum");
    median_warm.print("worst median of a call on a key Redis touched lately (every row but the first calls)");
    median_against_cold.print("worst median of a first call on a cold set, against a cost-1 first call on one");
  }

  // The row with the highest ratio among those considered.
  struct Worst {
    double ratio = 0;
    const Row* row = nullptr;

    void consider(double candidate, const Row& candidate_row) {
      if (row && candidate <= ratio) return;
      ratio = candidate;
      row = &candidate_row;
    }
    void print(const char* what) const {
      if (row) std::printf("%s: %.2fx, %s\n", what, ratio, row->scenario.c_str());
    }
  };

  long largest_;
  bool module_;
  swl::test::RedisServer server_;
  swl::Connection connection_ = server_.connect();
  swl::testing::ManualClock clock_;
  swl::LimiterOptions options_;
  std::vector<long long> base_;
  std::vector<Row> rows_;
};

}  // namespace

int main(int argc, char** argv) try {
  const long largest = argc > 1 ? std::stol(argv[1]) : 100'000;
  const bool module_alone = argc > 2 && std::string(argv[2]) == "module";
  if (!module_alone) Bench(largest, "").run();
  const char* named = std::getenv("SWL_NATIVE_MODULE");
  const std::string module = named ? named : SWL_NATIVE_MODULE;
  if (module.empty()) {
    std::printf("\nno module (configure with -DSWL_MODULE_SOURCE=<a Redis source tree>): not measured\n");
    return 0;
  }
  std::printf("\nthe log's decisions by the module (SWL.DECIDE), against its own cost-1 decision\n\n");
  Bench(largest, module).run();
} catch (const std::exception& error) {
  std::fprintf(stderr, "worst_case: %s\n", error.what());
  return 1;
}
