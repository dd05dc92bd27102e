// expect: RedisTier must keep the limiter contract (swl/limiter.hpp)
#include <swl/swl.hpp>

void use(swl::RedisClient& redis) {
  swl::TieredLimiter<swl::Connection> limiter(redis, swl::Limit{1, std::chrono::seconds(1)});
}
