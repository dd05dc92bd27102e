// expect: Algorithm must provide kName, kScriptName, kScript, kRecordsMembers and static void check
#include <swl/swl.hpp>

struct Scriptless {
  static constexpr std::string_view kName = "mine";
};

void use(swl::RedisClient& redis) {
  swl::RedisLimiter<Scriptless> limiter(redis, swl::Limit{1, std::chrono::seconds(1)});
}
