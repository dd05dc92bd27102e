// The module against swl's script on Redis's own clock, where the script takes its fast path and trusts the
// clock to have moved on: the server's wall clock is held still at a time this test sets
// (support/frozen_clock.cpp), and stepped by it, so that the two keys' calls of one step read the same
// microsecond.
// Decisions on Redis's clock (the whole prelude, the three-argument call that other tools make, a deadline
// on each side of the clock), refusals, peeks and weighted costs, the script's settles and leases on both
// keys, and keys handed to the script; after every step, the same answers and the same sets.

#include <catch2/catch.hpp>

#include <swl/algorithms/sliding_window_log.hpp>
#include <swl/detail/script/assembly.hpp>

#include "support/raw_redis.hpp"
#include "support/redis_server.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using swl::test::OwnedReply;
using swl::test::Pipeline;
using swl::test::RedisServer;
using swl::test::sameReply;
using swl::test::shown;

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

// Redis's clock as TIME reads it, in microseconds.
std::int64_t redisTime(Pipeline& redis) {
  const OwnedReply time = redis.command({"TIME"});
  REQUIRE(time->elements == 2);
  return std::stoll(time->element[0]->str) * 1000000 + std::stoll(time->element[1]->str);
}

}  // namespace

TEST_CASE("on Redis's own clock the module answers as the script does, fast path and deadlines too") {
  FrozenClock clock;
  std::int64_t now = 1700000000000000;
  clock.set(now);
  clock.preload();
  RedisServer server({"--loadmodule", SWL_NATIVE_MODULE});
  FrozenClock::leaveChildrenAlone();
  Pipeline redis(server.port());
  REQUIRE(redisTime(redis) == now);  // the server reads the clock this test sets
  const std::string decide_sha = shown(
      redis.command({"SCRIPT", "LOAD", std::string(swl::detail::scriptOf<swl::SlidingWindowLog>().text())}).get());
  const std::string settle_sha = shown(
      redis
          .command(
              {"SCRIPT", "LOAD",
               std::string(swl::detail::scriptOf<swl::SlidingWindowLog, swl::detail::ScriptRole::settle>().text())})
          .get());
  const std::string lease_sha = shown(
      redis
          .command({"SCRIPT", "LOAD",
                    std::string(swl::detail::scriptOf<swl::SlidingWindowLog, swl::detail::ScriptRole::lease>().text())})
          .get());

  std::mt19937_64 random(swl::test::wanted("SWL_MODULE_SEED", 53));
  const auto between = [&random](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  const auto chance = [&between](int percent) { return between(0, 99) < percent; };
  // A quarter of the build's decisions (test_module_log.cpp takes the rest): a step here is a round trip of its
  // own, since the clock moves between steps.
  const std::int64_t decisions = swl::test::wanted("SWL_MODULE_DECISIONS", 100000) / 4;
  const std::int64_t windows[] = {1000, 20000, 1000000, 60000000};
  const std::string ttl = "600000";  // the clock is frozen: nothing expires while the test runs
  std::int64_t made = 0, by_module = 0, admitted = 0, refused = 0, short_calls = 0, expired = 0, on_time = 0,
               same_microsecond = 0, clock_back = 0, settles = 0, leases = 0, traces = 0;
  while (made < decisions) {
    ++traces;
    const std::string by_script = "script:" + std::to_string(traces);
    const std::string by_module_key = "module:" + std::to_string(traces);
    std::int64_t window = windows[between(0, 3)];
    std::int64_t limit = chance(85) ? between(1, 20) : between(21, 120);
    const int weighted_percent = static_cast<int>(between(0, 2) * 20);
    const int handing_percent = static_cast<int>(between(0, 1) * 20);
    std::vector<std::pair<std::string, std::int64_t>> recorded;
    std::string history;  // the trace's steps so far, printed when one disagrees
    const std::int64_t steps = between(20, 300);
    for (std::int64_t step = 0; step < steps && made < decisions; ++step) {
      const std::int64_t pick = between(0, 99);
      if (pick < 1) {
        now -= between(1, window / 4 + 1);  // the clock stepped back (NTP)
        ++clock_back;
      } else if (pick < 6) {
        ++same_microsecond;  // two calls in one microsecond
      } else if (pick < 8) {
        now += window + between(0, window);
      } else {
        now += between(1, 2 * window / limit + 1);
      }
      clock.set(now);
      if (chance(2)) {
        window = windows[between(0, 3)];
        limit = chance(85) ? between(1, 20) : between(21, 120);
      }
      const std::int64_t kind = between(0, 99);
      std::vector<std::string> call;
      if (kind < 4 && !recorded.empty()) {
        const auto& [member, cost] =
            recorded[static_cast<std::size_t>(between(0, static_cast<std::int64_t>(recorded.size()) - 1))];
        call = {"EVALSHA",
                settle_sha,
                "1",
                "",
                std::to_string(window),
                std::to_string(limit),
                std::to_string(between(0, cost + 3)),
                "",
                member,
                ttl,
                "0",
                std::to_string(cost)};
        ++settles;
      } else if (kind < 7) {
        const std::int64_t cost = between(1, limit);
        call = {"EVALSHA",
                lease_sha,
                "1",
                "",
                std::to_string(window),
                std::to_string(limit),
                std::to_string(cost),
                "",
                "lease:" + std::to_string(traces) + ":" + std::to_string(step),
                ttl,
                "0",
                std::to_string(between(cost, limit)),
                std::to_string(between(1, window / 4 + 1)),
                "2",
                "",
                "0",
                "0"};
        ++leases;
      } else {
        const bool peek = chance(5);
        std::int64_t cost = peek ? 0 : 1;
        if (!peek && chance(weighted_percent)) cost = between(1, std::min<std::int64_t>(limit, 8));
        std::string member = "m:" + std::to_string(traces) + ":" + std::to_string(step);
        // The millisecond timestamp: a member that repeats within a millisecond. The script's fast path takes a
        // repeat for an admission it already recorded, even in a set counted by units, whose sums it then
        // leaves behind (docs/changes.md, known problems): so a timestamp member never repeats here.
        const bool timestamp_member = chance(5);
        if (timestamp_member) {
          member = "";
          now += 1000;
          clock.set(now);
        }
        std::string at;  // Redis's clock
        if (chance(5)) {
          // a deadline on Redis's clock: passed by a microsecond, reached, or ahead
          const std::int64_t deadline = now + between(-1, 1);
          char text[24];
          std::snprintf(text, sizeof text, "-%016lld", static_cast<long long>(deadline));
          at = text;
          (deadline < now ? expired : on_time) += 1;
        }
        call = {"EVALSHA",
                decide_sha,
                "1",
                "",
                std::to_string(window),
                std::to_string(limit),
                std::to_string(cost),
                at,
                member,
                ttl,
                chance(15) ? "1" : "0"};
        if (timestamp_member && at.empty() && chance(50)) {
          call.resize(7);  // the first three arguments alone: Redis's clock, the timestamp member, the window's ttl
          ++short_calls;
        }
        if (!member.empty() && cost > 0) recorded.emplace_back(member, cost);
      }
      const bool decision = call[1] == decide_sha;
      const bool module_decides = decision && !chance(handing_percent);
      call[3] = by_script;
      redis.send(call);
      call[3] = by_module_key;
      if (module_decides) {
        call.erase(call.begin(), call.begin() + 3);
        call.insert(call.begin(), "SWL.DECIDE");
      }
      redis.send(call);
      redis.send({"ZRANGE", by_script, "0", "-1", "WITHSCORES"});
      redis.send({"ZRANGE", by_module_key, "0", "-1", "WITHSCORES"});
      const OwnedReply script_answer = redis.receive();
      const OwnedReply module_answer = redis.receive();
      const OwnedReply script_set = redis.receive();
      const OwnedReply module_set = redis.receive();
      std::string words;
      for (const std::string& word : call)
        words += (word.size() == 40 ? (word == settle_sha  ? "<settle>"
                                       : word == lease_sha ? "<lease>"
                                                           : "<decide>")
                                    : "'" + word + "'") +
                 " ";
      if (!sameReply(module_answer.get(), script_answer.get()) || !sameReply(script_set.get(), module_set.get())) {
        FAIL("the trace so far:" << history << "\ntrace " << traces << ", step " << step << " at " << now << ": "
                                 << words << "\n  the module's key answered " << shown(module_answer.get())
                                 << ", the script's " << shown(script_answer.get())
                                 << "; the sets after:\n  script: " << swl::test::describedLog(script_set.get())
                                 << "\n  module: " << swl::test::describedLog(module_set.get()));
      }
      history += "\n  at " + std::to_string(now) + ": " + words + "-> " + shown(script_answer.get());
      if (decision) {
        ++made;
        by_module += module_decides ? 1 : 0;
        if (script_answer->type == REDIS_REPLY_ARRAY && call[6] != "0") {
          (script_answer->element[0]->integer == 1 ? admitted : refused) += 1;
        }
      }
    }
    redis.command({"DEL", by_script, by_module_key});
  }
  std::printf(
      "module vs script on Redis's clock: %lld decisions in %lld traces, %lld by the module; %lld admitted, "
      "%lld refused; %lld three-argument calls; deadlines: %lld passed, %lld not; %lld "
      "steps in the same microsecond, %lld clocks stepped back; %lld settles, %lld leases\n",
      static_cast<long long>(made), static_cast<long long>(traces), static_cast<long long>(by_module),
      static_cast<long long>(admitted), static_cast<long long>(refused), static_cast<long long>(short_calls),
      static_cast<long long>(expired), static_cast<long long>(on_time), static_cast<long long>(same_microsecond),
      static_cast<long long>(clock_back), static_cast<long long>(settles), static_cast<long long>(leases));
  CHECK(expired > 0);
  CHECK(on_time > 0);
  CHECK(refused > 0);
}
