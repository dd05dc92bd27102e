#pragma once
// LocalLimiter's core: exact sliding windows in this process's memory, for one process or a local tier.

#include <swl/decision.hpp>
#include <swl/detail/limiter/face_helpers.hpp>
#include <swl/detail/limiter/reporting.hpp>
#include <swl/detail/lru_map.hpp>
#include <swl/error.hpp>
#include <swl/observer.hpp>
#include <swl/options.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::detail {

// A template (of no parameter that matters) only so that its map and locks are compiled in the files that
// use a LocalLimiter, not in every file that includes swl: about a tenth of that file's compile time.
template <class = void>
class BasicLocalLimiterCore {
 public:
  explicit BasicLocalLimiterCore(Limit limit, LocalLimiterOptions options = {})
      : limit_(detail::checkedLimit(limit)), options_(checked(std::move(options))), logs_(options_.max_keys) {}

  // A request of `cost` is admitted iff the units in (now - window, now] plus `cost` fit in the limit. A
  // limit chosen for one call (a tenant's plan) applies to the key's one log from that decision on.
  Decision decide(std::string_view key, std::int64_t cost, const Limit& limit) {
    validate(key, cost, limit);
    const std::int64_t now = options_.clock.now().count();
    return logs_.with(key, [&](detail::LruMap<Log>& logs) {
      // Keys whose window emptied leave from the least recently used end, a couple per call, so an
      // idle limiter shrinks without a sweeper thread.
      logs.dropIdle([&](const Log& log) { return log.idleAt(now); }, 2);
      Log& log = logs.obtain(key, [&](std::string_view, const Log& evicted) {
        if (!evicted.idleAt(now)) evictions_.fetch_add(1, std::memory_order_relaxed);
      });
      return decideOn(log, now, cost, limit);
    });
  }

  std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests) {
    return detail::eachDecided(*this, requests);
  }

  void validate(std::string_view key, std::int64_t cost, const Limit& limit) const {
    if (limit != limit_) detail::checkedLimit(limit);
    detail::checkRequest("swl::LocalLimiter", "tryAcquire", key, cost, limit.max_requests);
  }

  // What `key` has used of its limit now, recording nothing.
  Usage peek(std::string_view key, const Limit& limit) {
    if (key.empty()) throw InvalidArgument("swl::LocalLimiter::peek: the key is empty");
    if (limit != limit_) detail::checkedLimit(limit);
    const std::int64_t now = options_.clock.now().count();
    return logs_.with(key, [&](detail::LruMap<Log>& logs) {
      Usage usage;
      usage.limit = limit.max_requests;
      if (Log* log = logs.find(key)) {
        const typename Log::Start start = log->startOf(now, limit.window.count());
        usage.used = log->units - start.units_before;
        usage.reset_after = std::chrono::microseconds(log->resetAfter(start, now, limit.window.count()));
      }
      usage.remaining = std::max<std::int64_t>(0, usage.limit - usage.used);
      return usage;
    });
  }

  // Forgets `key`; returns whether anything of it was held.
  bool reset(std::string_view key) {
    if (key.empty()) throw InvalidArgument("swl::LocalLimiter::reset: the key is empty");
    return logs_.with(key, [&](detail::LruMap<Log>& logs) { return logs.erase(key); });
  }

  const Limit& limit() const noexcept { return limit_; }

  // Keys held now, idle ones not yet dropped included.
  std::size_t keys() const { return logs_.size(); }

  // Keys forgotten while their window still held entries, to stay within max_keys.
  std::uint64_t evictions() const noexcept { return evictions_.load(std::memory_order_relaxed); }

 protected:
  // What the limiter's face (LimiterFace) applies around each decision.
  Reporting reporting() const {
    return {options_.observer, FailurePolicy::throw_error, Tier::in_memory, options_.enforcement,
            options_.access.get()};
  }

 private:
  // One key's admitted requests, oldest first: (time, units) pairs in a vector whose front part
  // [0, head) has slid out already and is reclaimed in bulk, so sliding costs O(1) amortised. As in
  // Redis's log, entries leave for good once a request is recorded under a window that slid past them
  // (its horizon), so a window widened later does not bring them back; a refusal or a peek lets nothing
  // go. `window` is the one it last slid under: a limit chosen per call may change it.
  struct Log {
    struct Entry {
      std::int64_t time;
      std::int64_t units;
    };
    std::vector<Entry> entries;
    std::size_t head = 0;
    std::int64_t units = 0;  // of entries [head, end)
    std::int64_t window = 0;

    // Where a window of `window` ending at `now` starts: its first entry, and the units of those before it
    // that have not left yet.
    struct Start {
      std::size_t first;
      std::int64_t units_before;
    };
    Start startOf(std::int64_t now, std::int64_t window) const {
      Start start{head, 0};
      while (start.first < entries.size() && entries[start.first].time <= now - window) {
        start.units_before += entries[start.first++].units;
      }
      return start;
    }

    // The entries before `start` leave for good: a request is recorded under its window.
    void slideTo(const Start& start, std::int64_t window) {
      this->window = window;
      head = start.first;
      units -= start.units_before;
      if (head == entries.size()) {
        entries.clear(), head = 0;
      } else if (head * 2 >= entries.size()) {
        entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(head)), head = 0;
      }
    }

    // Entries stay in time order, as in Redis's log: one at or before the newest entry's time (a clock
    // that stepped back) is recorded 1 us after it.
    void record(std::int64_t now, std::int64_t cost) {
      units += cost;
      entries.push_back({entries.empty() ? now : std::max(now, entries.back().time + 1), cost});
    }

    // The time until the window starting at `start` holds nothing.
    std::int64_t resetAfter(const Start& start, std::int64_t now, std::int64_t window) const {
      return start.first == entries.size() ? 0 : entries.back().time + window - now;
    }

    // The time until the oldest `needed` units of the window starting at `start` have left it.
    std::int64_t freedAfter(const Start& start, std::int64_t needed, std::int64_t now, std::int64_t window) const {
      std::int64_t freed = 0;
      for (std::size_t i = start.first; i < entries.size(); ++i) {
        freed += entries[i].units;
        if (freed >= needed) return entries[i].time + window - now;
      }
      return window;  // unreachable while units >= needed
    }

    bool idleAt(std::int64_t now) const { return head == entries.size() || entries.back().time <= now - window; }
  };

  static LocalLimiterOptions checked(LocalLimiterOptions options) {
    if (options.clock.isRedisTime()) {
      throw InvalidArgument("swl::LocalLimiter: Clock::redis() needs Redis; use Clock::system() or Clock::manual()");
    }
    if (options.max_keys == 0) throw InvalidArgument("swl::LocalLimiter: max_keys is 0; it must hold a key");
    return options;
  }

  // The same arithmetic as the sliding window script (algorithms/sliding_window.hpp).
  static Decision decideOn(Log& log, std::int64_t now, std::int64_t cost, const Limit& limit) {
    const std::int64_t window = limit.window.count();
    typename Log::Start start = log.startOf(now, window);
    Decision decision;
    decision.limit = limit.max_requests;
    decision.tier = Tier::in_memory;
    std::int64_t held = log.units - start.units_before;
    decision.allowed = held + cost <= limit.max_requests;
    if (decision.allowed) {
      log.slideTo(start, window);
      start = {log.head, 0};
      log.record(now, cost);
      held += cost;
    }
    decision.remaining = std::max<std::int64_t>(0, limit.max_requests - held);
    decision.reset_after = std::chrono::microseconds(log.resetAfter(start, now, window));
    if (!decision.allowed) {
      decision.retry_after =
          std::chrono::microseconds(log.freedAfter(start, held + cost - limit.max_requests, now, window));
    }
    return decision;
  }

  Limit limit_;
  LocalLimiterOptions options_;
  detail::ShardedLruMap<Log> logs_;
  std::atomic<std::uint64_t> evictions_{0};
};
using LocalLimiterCore = BasicLocalLimiterCore<>;

}  // namespace swl::detail
