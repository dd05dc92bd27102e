#pragma once
// Redis's own clock, held still at a time a test sets and stepped by it (support/frozen_clock.cpp, which the
// server preloads), so that the two keys' calls of one step on Redis's clock read the same microsecond.

#include <catch2/catch.hpp>

#include "log_traces.hpp"
#include "raw_redis.hpp"
#include "redis_server.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace swl::test {

// The wall clock of a server started with preload() (support/frozen_clock.cpp, preloaded): held at the
// time last set, in a file of eight bytes that the server maps and this test changes in place.
class FrozenClock {
 public:
  FrozenClock() {
    char path[] = "/tmp/swl-frozen-clock-XXXXXX";
    file_ = ::mkstemp(path);
    REQUIRE(file_ >= 0);
    path_ = path;
    REQUIRE(::ftruncate(file_, sizeof(std::int64_t)) == 0);
    void* const at = ::mmap(nullptr, sizeof(std::int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, file_, 0);
    REQUIRE(at != MAP_FAILED);
    microseconds_ = static_cast<volatile std::int64_t*>(at);
  }
  ~FrozenClock() {
    ::munmap(const_cast<std::int64_t*>(microseconds_), sizeof(std::int64_t));
    ::close(file_);
    ::unlink(path_.c_str());
  }
  FrozenClock(const FrozenClock&) = delete;
  FrozenClock& operator=(const FrozenClock&) = delete;

  // What the server started next needs in its environment; the test's later children are left alone.
  void preload() const {
    ::setenv("LD_PRELOAD", SWL_FROZEN_CLOCK_LIBRARY, 1);
    ::setenv("SWL_FROZEN_CLOCK", path_.c_str(), 1);
  }
  static void leaveChildrenAlone() {
    ::unsetenv("LD_PRELOAD");
    ::unsetenv("SWL_FROZEN_CLOCK");
  }

  // One aligned eight-byte store: the server never reads half of it.
  void set(std::int64_t microseconds) { *microseconds_ = microseconds; }

 private:
  int file_ = -1;
  std::string path_;
  volatile std::int64_t* microseconds_ = nullptr;
};

// A server that loaded the module, on a clock this test holds, first at `now`, and a connection to it.
struct ModuleOnFrozenClock {
  explicit ModuleOnFrozenClock(std::int64_t now) : preloaded(clock, now), redis(server.port()) {
    FrozenClock::leaveChildrenAlone();
  }

  // The clock set and preloaded before the server starts (members are made in this order).
  struct Preloaded {
    Preloaded(FrozenClock& clock, std::int64_t now) {
      clock.set(now);
      clock.preload();
    }
  };

  FrozenClock clock;
  Preloaded preloaded;
  RedisServer server{{"--loadmodule", modulePath()}};
  Pipeline redis;
};

// Redis's clock as TIME reads it, in microseconds.
inline std::int64_t redisTime(Pipeline& redis) {
  const OwnedReply time = redis.command({"TIME"});
  REQUIRE(time->elements == 2);
  return std::stoll(time->element[0]->str) * 1000000 + std::stoll(time->element[1]->str);
}

}  // namespace swl::test
