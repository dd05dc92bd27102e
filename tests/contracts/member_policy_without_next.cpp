// expect: MemberPolicy must have std::string next()
#include <swl/swl.hpp>

struct Nameless {};

void use(swl::RedisClient& redis) {
  swl::SlidingWindowLimiter<swl::PrefixKey, Nameless> limiter(redis, swl::Limit{1, std::chrono::seconds(1)});
}
