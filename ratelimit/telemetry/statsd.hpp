#pragma once
/// \file
/// A statsd sink, as envoyproxy/ratelimit's (lyft/gostats over UDP) sends: counters and timers kept in
/// memory, and every flush interval (STATS_FLUSH_INTERVAL, 10 s) sent as statsd lines (statsd_lines.hpp)
/// to statsd's HOST:PORT, in datagrams of whole lines. A counter sends what it gained since the last
/// flush, and nothing when it gained nothing; a timer sends each observation. A sink destroyed flushes
/// once more, so that the last calls are counted.
///
/// The threads that decide only add to atomics: a stat is found by its name once, in one of several
/// maps each behind its own mutex (held for the lookup alone), and kept; the flush takes each stat's
/// value with an exchange. Nothing is ever sent from those threads.

#include <ratelimit/telemetry/log.hpp>
#include <ratelimit/telemetry/statsd_lines.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// Where statsd is and what the lines carry: envoyproxy/ratelimit's USE_STATSD and its companions, or
/// --statsd and its companions.
struct StatsdOptions {
  /// statsd's host (a name or an address); no statsd when empty.
  std::string host;
  int port = 8125;
  std::chrono::milliseconds flush_interval{10'000};
  /// EXTRA_TAGS: appended to every name, as gostats appends tags (statsd_lines.hpp: tagSuffix).
  StatsdTags extra_tags;
  /// NEAR_LIMIT_RATIO: the share of a limit past which hits are also near_limit.
  float near_limit_ratio = 0.8F;

  bool enabled() const { return !host.empty(); }
};

/// A counter: what it gained since the last flush.
class StatsdCounter {
 public:
  void add(std::uint64_t increase) noexcept {
    if (increase != 0) gained_.fetch_add(increase, std::memory_order_relaxed);
  }
  /// What it gained since the last take, and 0 from then on: the flush's.
  std::uint64_t take() noexcept { return gained_.exchange(0, std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> gained_{0};
};

/// A timer: each observation, in whole milliseconds, until the flush takes them. Observations are
/// counted per millisecond up to kCountedMilliseconds (one atomic each, whatever the rate of calls);
/// slower ones are kept one by one, at most kMostSlower between two flushes.
class StatsdTimer {
 public:
  static constexpr std::size_t kCountedMilliseconds = 1000;
  static constexpr std::size_t kMostSlower = 100'000;

  /// Observes `took`, truncated to whole milliseconds as envoyproxy/ratelimit observes a call.
  void observe(std::chrono::nanoseconds took);

  /// Each observation since the last take, as (milliseconds, how many times), and none from then on.
  void take(const std::function<void(std::uint64_t milliseconds, std::uint64_t times)>& each);

 private:
  std::array<std::atomic<std::uint32_t>, kCountedMilliseconds> counts_{};
  std::mutex slower_mutex_;
  std::vector<std::uint64_t> slower_;
};

namespace statsd_detail {

/// Values by name, each made once and kept at one address until the map is destroyed; a lookup locks
/// one shard of several, by the name's hash. At most `most` names: past them, none is made.
template <class Value>
class Named {
 public:
  explicit Named(std::size_t most = std::numeric_limits<std::size_t>::max()) : most_(most) {}

  /// The value named `name`, made by `make()` (a prvalue) the first time; null once `most` are held.
  template <class Make>
  Value* find(std::string_view name, Make&& make) {
    Shard& shard = shards_[std::hash<std::string_view>{}(name) % shards_.size()];
    const std::lock_guard<std::mutex> lock(shard.mutex);
    if (const auto found = shard.by_name.find(name); found != shard.by_name.end()) return &found->second->value;
    if (count_.fetch_add(1, std::memory_order_relaxed) >= most_) {
      count_.fetch_sub(1, std::memory_order_relaxed);
      return nullptr;
    }
    auto entry = std::make_unique<Entry>(name, std::forward<Make>(make));
    Entry& made = *entry;
    shard.by_name.emplace(made.name, std::move(entry));  // the key views the entry's own name
    shard.entries.push_back(&made);
    return &made.value;
  }

  /// Each (name, value) made so far.
  std::vector<std::pair<std::string_view, Value*>> all() {
    std::vector<std::pair<std::string_view, Value*>> every;
    for (Shard& shard : shards_) {
      const std::lock_guard<std::mutex> lock(shard.mutex);
      for (Entry* entry : shard.entries) every.emplace_back(entry->name, &entry->value);
    }
    return every;
  }

 private:
  struct Entry {
    template <class Make>
    Entry(std::string_view entry_name, Make&& make) : name(entry_name), value(make()) {}
    std::string name;
    Value value;
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string_view, std::unique_ptr<Entry>> by_name;
    std::vector<Entry*> entries;
  };

  std::size_t most_;
  std::atomic<std::size_t> count_{0};
  std::array<Shard, 16> shards_;
};

}  // namespace statsd_detail

/// Counters and timers by name, flushed to statsd every flush interval from a thread of its own, and
/// once more when destroyed. Datagrams that cannot be sent are dropped, as statsd's are.
class StatsdSink {
 public:
  /// Sends to `options`' host and port (resolved when first sending, and again after a failure);
  /// `log`, which must outlive it, is told when the host cannot be found.
  explicit StatsdSink(const StatsdOptions& options, Log* log = nullptr);
  ~StatsdSink();
  StatsdSink(const StatsdSink&) = delete;
  StatsdSink& operator=(const StatsdSink&) = delete;

  /// The counter named `name` (EXTRA_TAGS are appended when it is sent), made the first time.
  StatsdCounter& counter(std::string_view name);
  /// The timer named `name`, made the first time.
  StatsdTimer& timer(std::string_view name);

  /// Sends every counter that gained and every observation, now.
  void flush();

 private:
  void run();
  void send(std::string_view datagram);
  bool connectSocket();

  std::string host_;
  int port_;
  std::chrono::milliseconds interval_;
  std::string tag_suffix_;
  Log* log_;
  statsd_detail::Named<StatsdCounter> counters_;
  statsd_detail::Named<StatsdTimer> timers_;
  std::mutex flush_mutex_;  // one flush at a time: the thread's, or the last
  int socket_ = -1;
  bool warned_ = false;  // that the host cannot be found, until it can
  std::mutex stop_mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once the rest is made
};

}  // namespace swl::ratelimit
