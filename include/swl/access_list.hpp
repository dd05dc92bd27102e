#pragma once
/// \file
/// AccessList: keys a limiter answers without asking anyone, by exact key or by prefix. An allowed key is
/// admitted untouched (internal callers, health checks: nothing is counted or recorded); a denied key is
/// refused (a known abuser: not a round trip to Redis). Every other key is limited as usual.
///
///   auto access = std::make_shared<swl::AccessList>();
///   access->allowPrefix("internal:");
///   access->deny("ip:203.0.113.9");
///   swl::LimiterOptions options;
///   options.access = access;  // read on every decision; change it at any time, from any thread
///
/// A key both allowed and denied (say under an allowed prefix, and denied by name) is denied: a denial is
/// the deliberate, narrower act. Decisions say who answered (Tier::allow_list, Tier::deny_list), so the
/// observer and metrics count them apart. A denial asks the caller back after the limit's window
/// (retry_after): it is for the operator to lift, not for time to heal. peek() and reset() are about what
/// the limiter counted, and ignore the lists.
///
/// Thread-safe. Reading costs one atomic load while both lists are empty, and otherwise a snapshot of the
/// lists (one reference count) and a lookup per distinct prefix length; a change copies the lists once.

#include <swl/error.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

/// Which list, if any, a key is on: what AccessList::listingOf answers.
enum class Listing {
  unlisted,  ///< limited as usual
  allowed,   ///< admitted without being counted
  denied,    ///< refused without being counted
};

/// The allow and deny lists a limiter consults before it counts (LimiterOptions::access): see
/// access_list.hpp for what each list does and what reading them costs.
class AccessList {
 public:
  /// Admits `key` without counting it.
  void allow(std::string_view key) {
    change("allow", key, [](Lists& lists, std::string name) { List::add(lists.allowed.keys, std::move(name)); });
  }
  /// Refuses `key` without asking Redis.
  void deny(std::string_view key) {
    change("deny", key, [](Lists& lists, std::string name) { List::add(lists.denied.keys, std::move(name)); });
  }
  /// Every key that starts with `prefix`.
  void allowPrefix(std::string_view prefix) {
    change("allowPrefix", prefix,
           [](Lists& lists, std::string name) { List::add(lists.allowed.prefixes, std::move(name)); });
  }
  /// Every key that starts with `prefix`.
  void denyPrefix(std::string_view prefix) {
    change("denyPrefix", prefix,
           [](Lists& lists, std::string name) { List::add(lists.denied.prefixes, std::move(name)); });
  }

  /// Takes a key, or a prefix, off both lists (what was never listed is left alone).
  void unlist(std::string_view key) {
    change("unlist", key, [](Lists& lists, const std::string& name) {
      List::remove(lists.allowed.keys, name);
      List::remove(lists.denied.keys, name);
    });
  }
  /// Takes a prefix off both lists, as unlist() does a key.
  void unlistPrefix(std::string_view prefix) {
    change("unlistPrefix", prefix, [](Lists& lists, const std::string& name) {
      List::remove(lists.allowed.prefixes, name);
      List::remove(lists.denied.prefixes, name);
    });
  }

  /// Empties both lists: every key is limited as usual again.
  void clear() {
    const std::lock_guard<std::mutex> lock(writing_);
    std::atomic_store(&lists_, std::shared_ptr<const Lists>());
    listed_.store(false, std::memory_order_release);
  }

  /// Which list `key` is on, a denial winning over an allowance; what every decision reads first.
  Listing listingOf(std::string_view key) const {
    if (!listed_.load(std::memory_order_acquire)) return Listing::unlisted;
    const std::shared_ptr<const Lists> lists = std::atomic_load(&lists_);
    if (!lists) return Listing::unlisted;
    if (lists->denied.holds(key)) return Listing::denied;
    if (lists->allowed.holds(key)) return Listing::allowed;
    return Listing::unlisted;
  }

 private:
  // One list: exact keys, and prefixes with the lengths they come in (a key is looked up once per length).
  // Sorted vectors searched by halves: lists change rarely and are read on every decision, and a vector
  // costs every file that includes swl less to compile than a std::set.
  struct List {
    std::vector<std::string> keys;            // sorted, each once
    std::vector<std::string> prefixes;        // sorted, each once
    std::vector<std::size_t> prefix_lengths;  // of `prefixes`, ascending, remade after every change

    static std::vector<std::string>::const_iterator find(const std::vector<std::string>& sorted,
                                                         std::string_view name) {
      const auto at =
          std::lower_bound(sorted.begin(), sorted.end(), name,
                           [](const std::string& listed, std::string_view sought) { return listed < sought; });
      return at != sorted.end() && *at == name ? at : sorted.end();
    }
    static void add(std::vector<std::string>& sorted, std::string name) {
      const auto at = std::lower_bound(sorted.begin(), sorted.end(), name);
      if (at == sorted.end() || *at != name) sorted.insert(at, std::move(name));
    }
    static void remove(std::vector<std::string>& sorted, std::string_view name) {
      const auto at = find(sorted, name);
      if (at != sorted.end()) sorted.erase(at);
    }

    void indexPrefixes() {
      prefix_lengths.clear();
      for (const std::string& prefix : prefixes) prefix_lengths.push_back(prefix.size());
      std::sort(prefix_lengths.begin(), prefix_lengths.end());
      prefix_lengths.erase(std::unique(prefix_lengths.begin(), prefix_lengths.end()), prefix_lengths.end());
    }
    bool holds(std::string_view key) const {
      if (find(keys, key) != keys.end()) return true;
      for (const std::size_t length : prefix_lengths) {
        if (length > key.size()) break;
        if (find(prefixes, key.substr(0, length)) != prefixes.end()) return true;
      }
      return false;
    }
    bool empty() const noexcept { return keys.empty() && prefixes.empty(); }
  };
  struct Lists {
    List allowed, denied;
  };

  template <class Edit>
  void change(std::string_view call, std::string_view name, Edit&& edit) {
    if (name.empty()) {
      throw InvalidArgument("swl::AccessList::" + std::string(call) + ": the " +
                            (call.find("Prefix") != std::string_view::npos
                                 ? "prefix is empty (it would match every key)"
                                 : "key is empty"));
    }
    const std::lock_guard<std::mutex> lock(writing_);
    const std::shared_ptr<const Lists> current = std::atomic_load(&lists_);
    auto changed = current ? std::make_shared<Lists>(*current) : std::make_shared<Lists>();
    edit(*changed, std::string(name));
    changed->allowed.indexPrefixes();
    changed->denied.indexPrefixes();
    const bool listed = !changed->allowed.empty() || !changed->denied.empty();
    std::atomic_store(&lists_, std::shared_ptr<const Lists>(std::move(changed)));
    listed_.store(listed, std::memory_order_release);
  }

  std::shared_ptr<const Lists> lists_;  // replaced whole on each change; readers keep the one they loaded
  std::atomic<bool> listed_{false};
  std::mutex writing_;
};

}  // namespace swl
