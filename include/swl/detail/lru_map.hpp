#pragma once
// LruMap: a map from string keys to values that holds at most `capacity` of them, forgetting the least
// recently used first. The in-memory tiers keep their per-key state in it, so a flood of distinct keys
// costs bounded memory. Not thread-safe: its owner locks.

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

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

}  // namespace swl::detail
