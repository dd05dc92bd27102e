// expect: TtlPolicy must be copyable with std::chrono::milliseconds ttl(std::chrono::microseconds) const
#include <swl/swl.hpp>

struct Seconds {
  std::chrono::seconds ttl(std::chrono::microseconds) const { return std::chrono::seconds(1); }
};

void use(swl::RedisClient& redis) {
  swl::SlidingWindowLimiter<swl::PrefixKey, swl::CompactMember, Seconds> limiter(
      redis, swl::Limit{1, std::chrono::seconds(1)});
}
