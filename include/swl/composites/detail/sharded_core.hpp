#pragma once
// ShardedLimiter's core: one limit split over several Redis keys.

#include <swl/algorithms/sliding_window.hpp>
#include <swl/decision.hpp>
#include <swl/detail/thread_random.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/options.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis_limiter.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::detail {

template <class Algorithm = SlidingWindowLog, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class ShardedLimiterCore {
 public:
  using Shard = RedisLimiter<Algorithm, ShardKey, MemberPolicy, TtlPolicy>;

  ShardedLimiterCore(RedisClient& redis, Limit limit, LimiterOptions options, Sharding sharding,
                     MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : limit_(detail::checkedLimit(limit)), options_(std::move(options)), count_(sharding.shards()) {
    checkShared(limit_);
    detail::refuseBlockFor(options_, "swl::ShardedLimiter",
                           "a refusal would block one shard, not the key; block the key with a limiter in front of "
                           "the sharded one");
    shards_.reserve(sharding.shards());
    for (std::size_t i = 0; i < sharding.shards(); ++i) {
      shards_.emplace_back(redis, share(limit_, i), options_, ShardKey(i, sharding.prefix()), members, ttl);
    }
  }

  // The shards' usage summed.
  Usage peek(std::string_view key, const Limit& limit) {
    Usage usage;
    usage.limit = limit.max_requests;
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      const Usage seen = shards_[i].peek(key, share(limit, i));
      usage.used += seen.used;
      usage.remaining += seen.remaining;
      usage.reset_after = std::max(usage.reset_after, seen.reset_after);
    }
    return usage;
  }

  bool reset(std::string_view key) {
    bool forgot = false;
    for (Shard& shard : shards_) forgot = shard.reset(key) || forgot;
    return forgot;
  }

  const Limit& limit() const noexcept { return limit_; }

  // A cost above the smallest share could never be admitted by some shards, so it is refused.
  void validate(std::string_view key, std::int64_t cost, const Limit& limit) const {
    detail::checkRequest("swl::ShardedLimiter", "tryAcquire", key, cost, limit.max_requests);
    if (limit != limit_) checkShared(detail::checkedLimit(limit));
    const std::int64_t smallest = share(limit, shards_.size() - 1).max_requests;
    if (cost > smallest) {
      throw InvalidArgument("swl::ShardedLimiter::tryAcquire: cost " + std::to_string(cost) +
                            " exceeds a shard's share of " + std::to_string(smallest) +
                            " of the limit, so some shards could never admit it (key " + detail::quoted(key) + ")");
    }
  }

  // A shard at random decides under its share of the limiter's limit, or of one chosen for this call.
  Decision decide(std::string_view key, std::int64_t cost, const Limit& limit) {
    validate(key, cost, limit);
    const std::size_t shard = randomShard();
    return scaled(shards_[shard].decide(key, cost, share(limit, shard)), limit);
  }

  // Each request goes to a random shard; each shard's requests go in one batch.
  std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests) {
    std::vector<Outcome> outcomes(requests.size());
    std::vector<std::vector<AcquireRequest>> batches(shards_.size());
    std::vector<std::vector<std::size_t>> indices(shards_.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const Limit& limit = requests[i].limitOr(limit_);
      try {
        validate(requests[i].key, requests[i].cost, limit);
        const std::size_t shard = randomShard();
        batches[shard].push_back({requests[i].key, requests[i].cost, share(limit, shard)});
        indices[shard].push_back(i);
      } catch (const InvalidArgument&) {
        outcomes[i] = {detail::blindRefusal(limit), std::current_exception()};
      }
    }
    for (std::size_t shard = 0; shard < shards_.size(); ++shard) {
      if (batches[shard].empty()) continue;
      std::vector<Outcome> answers = shards_[shard].decideMany(batches[shard]);
      for (std::size_t j = 0; j < answers.size(); ++j) {
        Outcome& outcome = outcomes[indices[shard][j]];
        outcome = std::move(answers[j]);
        if (outcome.ok()) outcome.decision = scaled(outcome.decision, requests[indices[shard][j]].limitOr(limit_));
      }
    }
    return outcomes;
  }

  // The Redis key of one shard of `key`, for operators and tests.
  std::string redisKey(std::string_view key, std::size_t shard) const { return shards_.at(shard).redisKey(key); }
  std::size_t shards() const noexcept { return shards_.size(); }

 protected:
  // What the limiter's face (LimiterFace) applies around each decision.
  Reporting reporting() const { return reportingOf(options_); }

 private:
  std::size_t randomShard() const { return static_cast<std::size_t>(detail::threadRandom().below(shards_.size())); }

  // Shard i's part of `limit`: the units dealt out as evenly as they go, the first shards taking the rest.
  Limit share(const Limit& limit, std::size_t i) const {
    const auto count = static_cast<std::int64_t>(count_);
    const std::int64_t rest = limit.max_requests % count;
    return {limit.max_requests / count + (static_cast<std::int64_t>(i) < rest ? 1 : 0), limit.window};
  }

  void checkShared(const Limit& limit) const {
    const auto count = static_cast<std::int64_t>(count_);
    if (count > limit.max_requests) {
      throw InvalidArgument("swl::ShardedLimiter: a limit of " + std::to_string(limit.max_requests) +
                            " cannot be shared out over " + std::to_string(count) + " shards; use fewer shards");
    }
  }

  // A shard's decision as the key's: its room stands for the key's as that room times the shards.
  Decision scaled(Decision decision, const Limit& limit) const {
    decision.limit = limit.max_requests;
    decision.remaining = std::min(limit.max_requests, decision.remaining * static_cast<std::int64_t>(shards_.size()));
    return decision;
  }

  Limit limit_;
  LimiterOptions options_;
  std::size_t count_;
  std::vector<Shard> shards_;
};

}  // namespace swl::detail
