#pragma once
// LruMap: a map from string keys to values that holds at most `capacity` of them, forgetting the least
// recently used first. The in-memory tiers keep their per-key state in it, so a flood of distinct keys
// costs bounded memory. Not thread-safe: its owner locks.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace swl::detail {

template <class Value>
class LruMap {
 public:
  // A capacity of 0 is taken as 1.
  explicit LruMap(std::size_t capacity) : capacity_(capacity) {}

  LruMap(const LruMap&) = delete;
  LruMap& operator=(const LruMap&) = delete;

  // The key's value, now the most recently used; null when absent.
  Value* find(std::string_view key) {
    const auto found = index_.find(key);
    if (found == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, found->second);
    return &found->second->second;
  }

  // The key's value, made by default when absent. At capacity the least recently used entry goes first,
  // handed to `on_evict(key, value)` just before it is dropped.
  template <class OnEvict>
  Value& obtain(std::string_view key, OnEvict&& on_evict) {
    if (Value* value = find(key)) return *value;
    if (index_.size() >= capacity_ && !order_.empty()) {
      on_evict(std::string_view(order_.back().first), order_.back().second);
      dropLeastRecent();
    }
    order_.emplace_front(std::string(key), Value());
    index_.emplace(order_.front().first, order_.begin());
    return order_.front().second;
  }

  // Drops up to `at_most` entries from the least recently used end while `is_idle(value)` says they
  // hold nothing worth keeping: idle keys leave without waiting for the map to fill.
  template <class IsIdle>
  void dropIdle(IsIdle&& is_idle, std::size_t at_most) {
    for (; at_most > 0 && !order_.empty() && is_idle(order_.back().second); --at_most) dropLeastRecent();
  }

  bool erase(std::string_view key) {
    const auto found = index_.find(key);
    if (found == index_.end()) return false;
    const auto entry = found->second;
    index_.erase(found);
    order_.erase(entry);
    return true;
  }

  std::size_t size() const noexcept { return index_.size(); }

  // `visit(key, value)` for every entry, most recently used first; nothing moves.
  template <class Visit>
  void forEach(Visit&& visit) {
    for (Entry& entry : order_) visit(std::string_view(entry.first), entry.second);
  }

 private:
  using Entry = std::pair<std::string, Value>;

  void dropLeastRecent() {
    index_.erase(std::string_view(order_.back().first));
    order_.pop_back();
  }

  std::size_t capacity_;
  std::list<Entry> order_;  // most recently used first; list nodes never move, so index_ may view their keys
  std::unordered_map<std::string_view, typename std::list<Entry>::iterator> index_;
};

// LruMaps behind independent locks, keys spread over them by hash, so threads working on different keys
// rarely wait for each other. Few keys would spread unevenly, so a small capacity keeps one map.
template <class Value>
class ShardedLruMap {
 public:
  explicit ShardedLruMap(std::size_t capacity) {
    const std::size_t count = capacity >= 1024 ? 16 : 1;
    for (std::size_t i = 0; i < count; ++i) {
      shards_.push_back(std::make_unique<Shard>(capacity / count + (i < capacity % count ? 1 : 0)));
    }
  }

  // `use(LruMap<Value>&)` with the key's map locked; its result is returned (not a reference into the map).
  template <class Use>
  auto with(std::string_view key, Use&& use) {
    Shard& shard = shardOf(key);
    std::lock_guard<std::mutex> lock(shard.mutex);
    return use(shard.map);
  }

  // `use(LruMap<Value>&, std::unique_lock<std::mutex>&, std::condition_variable&)`, for owners that wait
  // for a key's value to change: the lock is the map's, and the condition variable is notified by
  // whoever changes a value of that map that others may be waiting on.
  template <class Use>
  auto withWaiting(std::string_view key, Use&& use) {
    Shard& shard = shardOf(key);
    std::unique_lock<std::mutex> lock(shard.mutex);
    return use(shard.map, lock, shard.changed);
  }

  // `visit(key, value)` for every entry, one map locked at a time.
  template <class Visit>
  void forEach(Visit&& visit) {
    for (const auto& shard : shards_) {
      std::lock_guard<std::mutex> lock(shard->mutex);
      shard->map.forEach(visit);
    }
  }

  std::size_t size() const {
    std::size_t held = 0;
    for (const auto& shard : shards_) {
      std::lock_guard<std::mutex> lock(shard->mutex);
      held += shard->map.size();
    }
    return held;
  }

 private:
  struct Shard {
    explicit Shard(std::size_t capacity) : map(capacity) {}
    mutable std::mutex mutex;
    std::condition_variable changed;
    LruMap<Value> map;
  };

  Shard& shardOf(std::string_view key) {
    return *shards_[shards_.size() == 1 ? 0 : std::hash<std::string_view>()(key) % shards_.size()];
  }

  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace swl::detail
