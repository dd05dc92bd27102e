// expect: KeyPolicy must be copyable with std::string key(std::string_view) const
#include <swl/swl.hpp>

struct Keyless {};

void use(swl::RedisClient& redis) {
  swl::SlidingWindowLimiter<Keyless> limiter(redis, swl::Limit{1, std::chrono::seconds(1)});
}
