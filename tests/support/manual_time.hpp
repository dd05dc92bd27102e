#pragma once
// A private server, a connection to it, and limiter options that read a clock the test moves by hand.
// The clock starts on a whole second, a multiple of every window the tests use.

#include <swl/swl.hpp>

#include "redis_server.hpp"

namespace swl::test {

struct ManualTime {
  ManualTime() { options.clock = swl::Clock::manual(clock); }

  RedisServer server;
  swl::Connection connection = server.connect();
  swl::testing::ManualClock clock;
  swl::LimiterOptions options;
};

}  // namespace swl::test
