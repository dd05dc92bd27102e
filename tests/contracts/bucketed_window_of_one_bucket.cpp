// expect: Buckets must be in 2..120
#include <swl/swl.hpp>

void use(swl::RedisClient& redis) {
  swl::BucketedWindowLimiter<1> limiter(redis, swl::Limit{1, std::chrono::seconds(1)});
}
