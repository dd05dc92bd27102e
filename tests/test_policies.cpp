#include <swl/error.hpp>
#include <swl/options.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/hash_slot.hpp>
#include <swl/testing/manual_clock.hpp>

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

TEST_CASE("the prefix key policy joins prefix and key with a colon, bytes untouched") {
  CHECK(swl::PrefixKey().key("user:42") == "swl:user:42");
  CHECK(swl::PrefixKey("api").key("a b") == "api:a b");
  CHECK(swl::PrefixKey().key(std::string("a\0b", 3)) == std::string("swl:a\0b", 7));
}

TEST_CASE("the hash-tag key policy wraps the key in braces so Redis Cluster hashes only the key") {
  CHECK(swl::HashTagKey().key("user:42") == "swl:{user:42}");
  CHECK(swl::HashTagKey("rph").key("user:42") == "rph:{user:42}");
  CHECK(swl::HashTagKey().key("\xff") == "swl:{\xff}");
  CHECK(swl::HashTagKey().key("a}b") == "swl:{a}b}");  // the tag ends early; still one slot per "a"
}

TEST_CASE("the hash-tag key policy refuses what would leave the tag empty or move it, found by fuzzing") {
  using Catch::Matchers::Contains;
  // "swl:{}x}" hashes whole (an empty tag counts as none), so its slot would follow the prefix.
  CHECK_THROWS_WITH(swl::HashTagKey().key("}x"), Contains("would leave its hash tag empty"));
  CHECK_THROWS_AS(swl::HashTagKey().key(""), swl::InvalidArgument);
  CHECK_THROWS_WITH(swl::HashTagKey("a{b"), Contains("holds '{'"));
  CHECK(swl::hashSlot(swl::HashTagKey("second").key("x}")) == swl::hashSlot(swl::HashTagKey("hour").key("x}")));
}

TEST_CASE("compact members are unique across threads, free of '#', and shorter than a UUID") {
  constexpr int kThreads = 8, kPerThread = 10000;
  std::vector<std::vector<std::string>> made(kThreads);
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&made, thread] {
      swl::CompactMember members;
      for (int i = 0; i < kPerThread; ++i) made[thread].push_back(members.next());
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::set<std::string> unique;
  std::size_t longest = 0;
  for (const auto& batch : made) {
    for (const std::string& member : batch) {
      unique.insert(member);
      longest = std::max(longest, member.size());
      CHECK(member.find('#') == std::string::npos);
    }
  }
  CHECK(unique.size() == kThreads * kPerThread);
  CHECK(longest <= 15);
  CHECK(longest < swl::UuidMember().next().size());
}

// What `draw()` gives in a child forked now (the child's first member, say).
template <class Draw>
std::string drawnInAChild(Draw draw) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const std::string drawn = draw();
    const ssize_t written = ::write(pipe_fds[1], drawn.data(), drawn.size());
    ::_exit(written == static_cast<ssize_t>(drawn.size()) ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  char buffer[64];
  const ssize_t length = ::read(pipe_fds[0], buffer, sizeof buffer);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(length > 0);
  return std::string(buffer, static_cast<std::size_t>(length));
}

TEST_CASE("a forked child draws its own compact identity instead of repeating its parent's members") {
  swl::CompactMember members;
  const std::string parents = members.next();
  const std::string childs = drawnInAChild([] { return swl::CompactMember().next(); });
  REQUIRE(childs.size() > 11);
  CHECK(childs.substr(0, 11) != parents.substr(0, 11));
}

TEST_CASE("a forked child's UUID members differ from those its parent draws next") {
  swl::UuidMember members;
  members.next();  // the parent's generator is seeded before the fork, as in a server that forks workers
  const std::string childs = drawnInAChild([&members] { return members.next(); });
  CHECK(childs != members.next());
}

TEST_CASE("UUID members are random version 4 UUIDs") {
  swl::UuidMember members;
  const std::regex version4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string uuid = members.next();
    CHECK(std::regex_match(uuid, version4));
    seen.insert(uuid);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("the timestamp member policy leaves the member to the script's millisecond timestamp") {
  CHECK(swl::TimestampMember().next().empty());
}

TEST_CASE("TTL policies: the window rounded up to a millisecond, a multiple of it, or a fixed time") {
  CHECK(swl::WindowTtl().ttl(2s) == 2000ms);
  CHECK(swl::WindowTtl().ttl(1500us) == 2ms);
  CHECK(swl::WindowMultipleTtl(3).ttl(1500ms) == 4500ms);
  CHECK(swl::FixedTtl(90s).ttl(1s) == 90s);
  CHECK_THROWS_WITH(swl::WindowMultipleTtl(0), Catch::Contains("multiple 0"));
}

TEST_CASE("a manual clock is shared by its copies, and Redis's clock reads nothing locally") {
  swl::testing::ManualClock clock(100s);
  swl::Clock limiter_clock = swl::Clock::manual(clock);
  CHECK_FALSE(limiter_clock.isRedisTime());
  CHECK(limiter_clock.now() == 100s);
  clock.advance(250ms);
  CHECK(limiter_clock.now() == 100250ms);
  clock.set(5s);
  CHECK(limiter_clock.now() == 5s);
  CHECK(swl::Clock::redis().isRedisTime());

  const auto system_now = swl::Clock::system().now();
  const auto reference =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch());
  CHECK(reference - system_now < 1s);
  CHECK(reference >= system_now);
}

TEST_CASE("a shard's key policy puts the shard inside the hash tag, so each shard hashes apart") {
  const swl::Sharding keys(4);
  CHECK(keys.shards() == 4);
  CHECK(keys.prefix() == "swl");
  CHECK(swl::ShardKey(0, keys.prefix()).key("user:42") == "swl:{0:user:42}");
  CHECK(swl::ShardKey(1, "hot").key("a}b") == "hot:{1:a}b}");
  std::set<std::uint16_t> slots;
  for (std::size_t shard = 0; shard < 4; ++shard)
    slots.insert(swl::hashSlot(swl::ShardKey(shard, "swl").key("user:42")));
  CHECK(slots.size() == 4);
}

TEST_CASE("the sharded key policy refuses no shards, and a prefix whose brace would pin every shard") {
  CHECK_THROWS_AS(swl::Sharding(0), swl::InvalidArgument);
  CHECK_THROWS_WITH(swl::Sharding(4, "a{b"), Catch::Contains("holds '{'"));
}
