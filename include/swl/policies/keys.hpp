#pragma once
/// \file
/// Key policies: how a caller's key ("user:42") becomes the Redis key of its window.
///
/// A KeyPolicy is any copyable type with
///     std::string key(std::string_view user_key) const;
/// returning the Redis key for `user_key` (never empty, binary-safe). Limiters with different limits must
/// not share Redis keys, or each would trim the other's entries with its own window: give each limiter
/// its own prefix.

#include <swl/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace swl {

/// Whether T is a key policy: copyable, with `std::string key(std::string_view) const`.
template <class T, class = void>
struct IsKeyPolicy : std::false_type {};
/// The case where T has key(); its type and T's copyability decide.
template <class T>
struct IsKeyPolicy<T, std::void_t<decltype(std::declval<const T&>().key(std::string_view()))>>
    : std::bool_constant<std::is_same_v<decltype(std::declval<const T&>().key(std::string_view())), std::string> &&
                         std::is_copy_constructible_v<T>> {};

/// IsKeyPolicy<T>::value: what the limiters' static_asserts ask.
template <class T>
inline constexpr bool isKeyPolicy = IsKeyPolicy<T>::value;

/// "prefix:user_key". The default, for a single Redis.
class PrefixKey {
 public:
  /// Keys that start with `prefix` and a colon.
  explicit PrefixKey(std::string prefix = "swl") : prefix_(std::move(prefix)) {}

  /// The Redis key of `user_key`.
  std::string key(std::string_view user_key) const {
    std::string redis_key;
    redis_key.reserve(prefix_.size() + 1 + user_key.size());
    return redis_key.append(prefix_).append(1, ':').append(user_key);
  }

 private:
  std::string prefix_;
};

/// "prefix:{user_key}". Redis Cluster hashes only the part inside the first braces, so every key built
/// from the same user key lands in one slot, whatever the prefix: what a script touching several of
/// them (several limits for one user) needs there. A user key that itself holds '}' ends the tag early,
/// which changes only where the key lives, never which key it is. A user key that starts with '}' would
/// leave the tag empty, and Redis would hash the whole key, prefix included: such a key is refused, and
/// so is a prefix holding '{', which would move the tag.
class HashTagKey {
 public:
  /// Keys that start with `prefix`; a prefix holding '{' is an InvalidArgument.
  explicit HashTagKey(std::string prefix = "swl") : prefix_(std::move(prefix)) {
    if (prefix_.find('{') != std::string::npos) {
      throw InvalidArgument("swl::HashTagKey: the prefix " + detail::quoted(prefix_) +
                            " holds '{', which would move the hash tag off the user key");
    }
  }

  /// The Redis key of `user_key`; an empty one, or one starting with '}', is an InvalidArgument.
  std::string key(std::string_view user_key) const {
    if (user_key.empty() || user_key.front() == '}') {
      throw InvalidArgument("swl::HashTagKey: the key " + detail::quoted(user_key) +
                            " would leave its hash tag empty (it is empty or starts with '}'), so its slot "
                            "would depend on the prefix");
    }
    std::string redis_key;
    redis_key.reserve(prefix_.size() + 3 + user_key.size());
    return redis_key.append(prefix_).append(":{").append(user_key).append(1, '}');
  }

 private:
  std::string prefix_;
};

/// One hot key spread over `shards` Redis keys in different hash slots, `"prefix:{0:user_key}"` to
/// `"prefix:{S-1:user_key}"`, so on Redis Cluster its load spreads over several masters (the seed articles'
/// random-suffix sharding). It changes the limit too (each shard holds a share), so it is not a KeyPolicy
/// but the description a swl::ShardedLimiter (composites/sharded_limiter.hpp) is built from; ShardKey is
/// one shard's KeyPolicy.
class Sharding {
 public:
  /// `shards` shards (at least one) under `prefix`, which must not hold '{'.
  explicit Sharding(std::size_t shards, std::string prefix = "swl") : shards_(shards), prefix_(std::move(prefix)) {
    if (shards_ == 0) throw InvalidArgument("swl::Sharding: 0 shards; a key needs at least one");
    if (prefix_.find('{') != std::string::npos) {
      throw InvalidArgument("swl::Sharding: the prefix " + detail::quoted(prefix_) +
                            " holds '{', which would pin every shard to one hash slot");
    }
  }

  /// How many shards a key is spread over.
  std::size_t shards() const noexcept { return shards_; }
  /// What every shard's key starts with.
  const std::string& prefix() const noexcept { return prefix_; }

 private:
  std::size_t shards_;
  std::string prefix_;
};

/// Shard `shard` of a Sharding: "prefix:{shard:user_key}".
class ShardKey {
 public:
  /// Shard `shard` of keys under `prefix`.
  ShardKey(std::size_t shard, std::string prefix) : shard_text_(std::to_string(shard)), prefix_(std::move(prefix)) {}

  /// The Redis key of `user_key` in this shard.
  std::string key(std::string_view user_key) const {
    std::string redis_key;
    redis_key.reserve(prefix_.size() + 3 + shard_text_.size() + 1 + user_key.size());
    return redis_key.append(prefix_).append(":{").append(shard_text_).append(1, ':').append(user_key).append(1, '}');
  }

 private:
  std::string shard_text_;
  std::string prefix_;
};

}  // namespace swl
