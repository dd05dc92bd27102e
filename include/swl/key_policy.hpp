#pragma once
// Key policies: how a caller's key ("user:42") becomes the Redis key of its window.
//
// A KeyPolicy is any copyable type with
//     std::string key(std::string_view user_key) const;
// returning the Redis key for `user_key` (never empty, binary-safe). Limiters with different limits must
// not share Redis keys, or each would trim the other's entries with its own window: give each limiter
// its own prefix.
//
// A sharded KeyPolicy (ShardedKey) spreads one user key over several Redis keys instead, with
//     std::size_t shards() const;
//     std::string key(std::string_view user_key, std::size_t shard) const;   // shard < shards()
// The limiter then sends each request to one shard drawn at random and gives each shard its share
// of the limit.

#include <swl/error.hpp>

#include <cstddef>
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
// which changes only where the key lives, never which key it is. A user key that starts with '}' would
// leave the tag empty, and Redis would hash the whole key, prefix included: such a key is refused, and
// so is a prefix holding '{', which would move the tag.
class HashTagKey {
 public:
  explicit HashTagKey(std::string prefix = "swl") : prefix_(std::move(prefix)) {
    if (prefix_.find('{') != std::string::npos) {
      throw InvalidArgument("swl::HashTagKey: the prefix '" + prefix_ +
                            "' holds '{', which would move the hash tag off the user key");
    }
  }

  std::string key(std::string_view user_key) const {
    if (user_key.empty() || user_key.front() == '}') {
      throw InvalidArgument("swl::HashTagKey: the key '" + std::string(user_key) +
                            "' would leave its hash tag empty (it is empty or starts with '}'), so its slot "
                            "would depend on the prefix");
    }
    std::string redis_key;
    redis_key.reserve(prefix_.size() + 3 + user_key.size());
    return redis_key.append(prefix_).append(":{").append(user_key).append(1, '}');
  }

 private:
  std::string prefix_;
};

// "prefix:{shard:user_key}" for shard 0..shards-1: one hot key's limit spread over `shards` keys in
// different hash slots, so on Redis Cluster its load spreads over several masters (the seed articles'
// random-suffix sharding). Each request goes to one shard at random, and each shard admits its share
// of the limit (limit / shards, the remainder spread over the first ones), so the shards together
// never admit more than the limit. They may admit less: a request can meet a full shard while
// another still has room. Under overload every shard fills and the key gets its whole limit; when
// demand is near the limit, some requests are turned away early (about 2% of them with 4 shards at
// exactly the limit, see README "Hot keys"). Use it only for keys whose traffic one master cannot
// carry; every other key is exact with PrefixKey or HashTagKey.
class ShardedKey {
 public:
  explicit ShardedKey(std::size_t shards, std::string prefix = "swl") : shards_(shards), prefix_(std::move(prefix)) {
    if (shards_ == 0) throw InvalidArgument("swl::ShardedKey: 0 shards; a key needs at least one");
    if (prefix_.find('{') != std::string::npos) {
      throw InvalidArgument("swl::ShardedKey: the prefix '" + prefix_ +
                            "' holds '{', which would pin every shard to one hash slot");
    }
  }

  std::size_t shards() const noexcept { return shards_; }

  std::string key(std::string_view user_key, std::size_t shard) const {
    const std::string shard_text = std::to_string(shard);
    std::string redis_key;
    redis_key.reserve(prefix_.size() + 3 + shard_text.size() + 1 + user_key.size());
    return redis_key.append(prefix_).append(":{").append(shard_text).append(1, ':').append(user_key).append(1, '}');
  }

 private:
  std::size_t shards_;
  std::string prefix_;
};

}  // namespace swl
