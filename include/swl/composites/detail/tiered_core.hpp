#pragma once
// TieredLimiter's core: a cache of Redis's refusals in front of a Redis limiter, insurance behind it.

#include <swl/algorithms/sliding_window.hpp>
#include <swl/decision.hpp>
#include <swl/detail/holds_error.hpp>
#include <swl/detail/limiter/refusal.hpp>
#include <swl/detail/lru_map.hpp>
#include <swl/error.hpp>
#include <swl/limiter.hpp>
#include <swl/local_limiter.hpp>
#include <swl/options.hpp>
#include <swl/redis/client.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace swl::detail {

template <class RedisTier = SlidingWindowLimiter<>>
class TieredLimiterCore {
  static_assert(isLimiter<RedisTier>,
                "swl::TieredLimiter<RedisTier>: RedisTier must keep the limiter contract (swl/limiter.hpp)");

 public:
  // `policies` go to RedisTier's constructor after the options (key, member and TTL policies).
  template <class... Policies>
  TieredLimiterCore(RedisClient& redis, Limit limit, LimiterOptions options = {}, TierOptions tiers = {},
                    Policies&&... policies)
      : options_(std::move(options)),
        tiers_(checked(tiers, limit)),
        redis_(redis, limit, options_, std::forward<Policies>(policies)...),
        refusals_(tiers_.max_cached_refusals) {
    if (tiers_.instances > 0) insurance_.emplace(insuredLimit(limit, tiers_), insuranceOptions(options_, tiers_));
  }

  // Insurance answers in place of a Redis that failed: the failure still reaches the observer (see
  // LimiterFace), through decideKeepingCause and decideManyKeepingCauses below.
  static constexpr bool kAnswersForFailures = true;

  // Redis's view of the key; errors are thrown, as RedisLimiter::peek does.
  Usage peek(std::string_view key, const Limit& limit) { return redis_.peek(key, limit); }

  // Forgets the key in Redis and in this instance's tiers (other instances' caches keep their refusals
  // until their retry_after passes).
  bool reset(std::string_view key) {
    refusals_.with(key, [&](detail::LruMap<Refusal>& refusals) { return refusals.erase(key); });
    if (insurance_) insurance_->reset(key);
    return redis_.reset(key);
  }

  const Limit& limit() const noexcept { return redis_.limit(); }
  void validate(std::string_view key, std::int64_t cost, const Limit& limit) const {
    redis_.validate(key, cost, limit);
  }

  // The tiers in order, under the limiter's limit or one chosen for this call (a tenant's plan): Redis
  // decides under it, a cached refusal repeats only for the limit it was made under, and insurance takes
  // its share of it.
  Decision decide(std::string_view key, std::int64_t cost, const Limit& limit) {
    std::exception_ptr cause;
    return decideKeepingCause(key, cost, limit, cause);
  }

  std::vector<Outcome> decideMany(const std::vector<AcquireRequest>& requests) {
    std::vector<std::exception_ptr> causes(requests.size());
    return decideManyKeepingCauses(requests, causes);
  }

  // Whether the last call that asked Redis found it unreachable (insurance is deciding).
  bool insured() const noexcept { return redis_down_until_.load() != kRedisUp; }

 protected:
  // What the limiter's face (LimiterFace) applies around each decision.
  Reporting reporting() const { return reportingOf(options_); }

 private:
  static constexpr std::int64_t kRedisUp = -1;

  using Refusal = detail::Refusal;

 protected:
  // The tiers in order: the refusal cache, insurance while Redis is down, Redis. Throws what Redis failed
  // with when no tier could stand in; `cause` keeps it when insurance did.
  Decision decideKeepingCause(std::string_view key, std::int64_t cost, const Limit& limit, std::exception_ptr& cause) {
    validate(key, cost, limit);
    const std::int64_t now = localNow();
    if (std::optional<Decision> refused = cachedRefusal(key, cost, limit, now)) return *refused;
    if (insurance_ && !mayAskRedis(now)) return insure(key, cost, limit);
    try {
      return redisDecided(key, cost, limit, redis_.decide(key, cost, limit), now);
    } catch (const InvalidArgument&) {  // refused by the client itself (keys in two cluster slots)
      throw;
    } catch (const Error&) {
      if (!insurance_) throw;
      cause = std::current_exception();
      return insuredAfter(key, cost, limit);
    }
  }

  // Each request goes through the tiers as decide would; those Redis must decide go in one batch. A
  // request insurance answered for keeps Redis's failure in `causes`; one no tier could answer, in its
  // Outcome.
  std::vector<Outcome> decideManyKeepingCauses(const std::vector<AcquireRequest>& requests,
                                               std::vector<std::exception_ptr>& causes) {
    std::vector<Outcome> outcomes(requests.size());
    std::vector<AcquireRequest> asked;  // what Redis must decide: asked[i] answers requests[asked_index[i]]
    std::vector<std::size_t> asked_index;
    const std::int64_t now = localNow();
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const std::string_view key = requests[i].key;
      const std::int64_t cost = requests[i].cost;
      const Limit& limit = requests[i].limitOr(this->limit());
      try {
        validate(key, cost, limit);
        if (std::optional<Decision> refused = cachedRefusal(key, cost, limit, now)) {
          outcomes[i].decision = *refused;
        } else if (insurance_ && !mayAskRedis(now)) {
          outcomes[i].decision = insure(key, cost, limit);
        } else {
          asked.push_back(requests[i]), asked_index.push_back(i);
        }
      } catch (const Error&) {
        outcomes[i] = {detail::blindRefusal(limit), std::current_exception()};
      }
    }
    std::vector<Outcome> answers = redis_.decideMany(asked);
    for (std::size_t j = 0; j < answers.size(); ++j) {
      const std::size_t i = asked_index[j];
      const std::string_view key = requests[i].key;
      const std::int64_t cost = requests[i].cost;
      const Limit& limit = requests[i].limitOr(this->limit());
      if (answers[j].ok()) {
        outcomes[i].decision = redisDecided(key, cost, limit, answers[j].decision, now);
      } else if (insurance_ && !detail::holdsError<InvalidArgument>(answers[j].error)) {
        causes[i] = answers[j].error;
        outcomes[i].decision = insuredAfter(key, cost, limit);
      } else {
        outcomes[i] = std::move(answers[j]);
      }
    }
    return outcomes;
  }

 private:
  // Redis answered: it is up, and a refusal is cached.
  Decision redisDecided(std::string_view key, std::int64_t cost, const Limit& limit, const Decision& decision,
                        std::int64_t now) {
    redis_down_until_.store(kRedisUp);
    if (!decision.allowed) cacheRefusal(key, cost, limit, decision, now);
    return decision;
  }

  // Redis failed: insurance decides, and Redis is asked again only after the retry interval.
  Decision insuredAfter(std::string_view key, std::int64_t cost, const Limit& limit) {
    redis_down_until_.store(localNow() + retryInterval());
    return insure(key, cost, limit);
  }

  std::optional<Decision> cachedRefusal(std::string_view key, std::int64_t cost, const Limit& limit, std::int64_t now) {
    if (!cachesRefusals()) return std::nullopt;
    return refusals_.with(key, [&](detail::LruMap<Refusal>& refusals) -> std::optional<Decision> {
      const Refusal* refusal = refusals.find(key);
      if (refusal == nullptr) return std::nullopt;
      if (now >= refusal->retry_at) {
        refusals.erase(key);
        return std::nullopt;
      }
      if (!refusal->stillRefuses(limit, cost, now)) return std::nullopt;
      return refusal->repeated(now);
    });
  }

  // `now` was read before the call went out (see Refusal::of).
  void cacheRefusal(std::string_view key, std::int64_t cost, const Limit& limit, const Decision& decision,
                    std::int64_t now) {
    if (!cachesRefusals()) return;
    refusals_.with(key, [&](detail::LruMap<Refusal>& refusals) {
      refusals.dropIdle([&](const Refusal& refusal) { return refusal.retry_at <= now; }, 2);
      refusals.obtain(key, [](std::string_view, const Refusal&) {}) = Refusal::of(limit, cost, decision, now);
    });
  }

  bool cachesRefusals() const noexcept {
    return tiers_.cache_refusals && options_.rejected == RejectedRequests::not_counted;
  }

  // While insured, one call per interval claims the right to ask Redis; the rest stay insured.
  bool mayAskRedis(std::int64_t now) {
    std::int64_t down_until = redis_down_until_.load();
    if (down_until == kRedisUp) return true;
    return now >= down_until && redis_down_until_.compare_exchange_strong(down_until, now + retryInterval());
  }

  // This instance's share of `limit` decides (a cost above it could never be admitted here).
  Decision insure(std::string_view key, std::int64_t cost, const Limit& limit) {
    const Limit share = insuredLimit(limit, tiers_);
    if (cost > share.max_requests) {
      Decision refused = detail::blindRefusal(share);
      refused.tier = Tier::insurance;
      return refused;
    }
    Decision decision = insurance_->decide(key, cost, share);
    decision.tier = Tier::insurance;
    return decision;
  }

  // The refusal cache and the insurance tier run on the limiter's clock when it is a client clock, so
  // tests can move them by hand; under Redis's clock they use this host's monotonic clock.
  std::int64_t localNow() const {
    if (!options_.clock.isRedisTime()) return options_.clock.now().count();
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::int64_t retryInterval() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(tiers_.redis_retry_interval).count();
  }

  static TierOptions checked(const TierOptions& tiers, const Limit& limit) {
    if (tiers.instances < 0) {
      throw InvalidArgument("swl::TierOptions: instances " + std::to_string(tiers.instances) + " is negative");
    }
    if (tiers.instances > 0 && limit.max_requests / tiers.instances == 0) {
      throw InvalidArgument("swl::TierOptions: a limit of " + std::to_string(limit.max_requests) +
                            " leaves nothing to share among " + std::to_string(tiers.instances) + " instances");
    }
    if (tiers.redis_retry_interval.count() < 0) {
      throw InvalidArgument("swl::TierOptions: redis_retry_interval is negative");
    }
    if (tiers.max_cached_refusals == 0 || tiers.max_insured_keys == 0) {
      throw InvalidArgument("swl::TierOptions: max_cached_refusals and max_insured_keys must be at least 1");
    }
    return tiers;
  }

  static Limit insuredLimit(Limit limit, const TierOptions& tiers) {
    limit.max_requests /= tiers.instances;
    return limit;
  }

  static LocalLimiterOptions insuranceOptions(const LimiterOptions& options, const TierOptions& tiers) {
    LocalLimiterOptions local;
    if (!options.clock.isRedisTime()) local.clock = options.clock;
    local.max_keys = tiers.max_insured_keys;
    return local;
  }

  LimiterOptions options_;
  TierOptions tiers_;
  RedisTier redis_;
  detail::ShardedLruMap<Refusal> refusals_;  // its locks stay off the hot path of other keys
  std::optional<LocalLimiter> insurance_;
  // kRedisUp, or the local time after which one call may ask Redis again.
  std::atomic<std::int64_t> redis_down_until_{kRedisUp};
};

}  // namespace swl::detail
