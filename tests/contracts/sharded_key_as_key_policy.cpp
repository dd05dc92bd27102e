// expect: to spread one key over several, use swl::ShardedLimiter
#include <swl/swl.hpp>

void use(swl::RedisClient& redis) {
  swl::SlidingWindowLimiter<swl::ShardedKey> limiter(redis, swl::Limit{4, std::chrono::seconds(1)}, {},
                                                     swl::ShardedKey(4));
}
