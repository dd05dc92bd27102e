#pragma once
// Key policies: how a caller's key ("user:42") becomes the Redis key of its window.
//
// A KeyPolicy is any copyable type with
//     std::string key(std::string_view user_key) const;
// returning the Redis key for `user_key` (never empty, binary-safe). Limiters with different limits must
// not share Redis keys, or each would trim the other's entries with its own window: give each limiter
// its own prefix.

#include <string>
#include <string_view>
#include <utility>

namespace swl {

// "prefix:user_key". The default, for a single Redis.
class PrefixKey {
 public:
  explicit PrefixKey(std::string prefix = "swl") : prefix_(std::move(prefix)) {}

  std::string key(std::string_view user_key) const {
    std::string redis_key;
    redis_key.reserve(prefix_.size() + 1 + user_key.size());
    return redis_key.append(prefix_).append(1, ':').append(user_key);
  }

 private:
  std::string prefix_;
};

// "prefix:{user_key}". Redis Cluster hashes only the part inside the first braces, so every key built
// from the same user key lands in one slot, whatever the prefix: what a script touching several of
// them (several limits for one user) needs there. A user key that itself holds '}' ends the tag early,
// which changes only where the key lives, never which key it is.
class HashTagKey {
 public:
  explicit HashTagKey(std::string prefix = "swl") : prefix_(std::move(prefix)) {}

  std::string key(std::string_view user_key) const {
    std::string redis_key;
    redis_key.reserve(prefix_.size() + 3 + user_key.size());
    return redis_key.append(prefix_).append(":{").append(user_key).append(1, '}');
  }

 private:
  std::string prefix_;
};

}  // namespace swl
