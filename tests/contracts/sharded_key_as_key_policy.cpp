// expect: to spread one key over several, use swl::ShardedLimiter
#include <swl/swl.hpp>

void use(swl::RedisClient& redis) {
  swl::SlidingWindowLimiter<swl::Sharding> limiter(redis, swl::Limit{4, std::chrono::seconds(1)}, {},
                                                     swl::Sharding(4));
}
