#pragma once
// A planned Sentinel failover (SENTINEL FAILOVER) under load, measured as a user would see it: four
// threads call one key at twice the limit's rate through a SentinelConnection, a failover happens
// mid-traffic, and afterwards two things are counted:
// - over-admission: the most admissions whose [before-call, after-return] spans fall inside one
//   window-long interval, beyond the limit (0 for a sound limiter);
// - loss: admissions Redis acknowledged (Tier::redis, allowed) whose entry is not on the new master,
//   among those recent enough that no trimming could have removed them.
// Shared by tests/test_sentinel.cpp (which asserts the targets) and bench/failover.cpp (which reports
// every mode).

#include <swl/swl.hpp>

#include "redis_sentinel.hpp"
#include "replies.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace swl::test {

struct FailoverResult {
  std::int64_t limit = 0;
  long long admitted = 0;                    // acknowledged admissions, in all
  long long most_in_a_window = 0;            // the most admissions in one window-long interval
  long long checked = 0;                     // recent acknowledged admissions looked up on the new master
  long long lost = 0;                        // of those, missing there
  long long refused_by_policy = 0;           // decisions the failure policy made while Redis could not
  std::chrono::milliseconds switch_took{0};  // from SENTINEL FAILOVER until every sentinel names the replica

  long long overAdmitted() const { return std::max<long long>(0, most_in_a_window - limit); }
};

// Members named by a counter, each remembered by the thread that asked for it, so that a test knows
// which entry each of its admissions wrote.
class RememberedMember {
 public:
  std::string next() {
    std::string member = "m" + std::to_string(counter_->fetch_add(1));
    last() = member;
    return member;
  }
  static std::string& last() {
    thread_local std::string member;
    return member;
  }

 private:
  std::shared_ptr<std::atomic<long>> counter_ = std::make_shared<std::atomic<long>>(0);
};

// `after_switch`: how long the traffic goes on once every sentinel names the new master.
inline FailoverResult runPlannedFailover(RedisSentinel& deployment, swl::SentinelOptions options,
                                         std::chrono::milliseconds after_switch = std::chrono::seconds(3)) {
  using Clock = std::chrono::steady_clock;
  constexpr std::int64_t kLimit = 300;
  constexpr auto kWindow = std::chrono::seconds(6);
  constexpr int kThreads = 4;
  const auto pause = std::chrono::duration_cast<Clock::duration>(kWindow) * kThreads / (2 * kLimit);  // 2x the rate

  const int replica = deployment.firstReplicaPort();
  swl::SentinelConnection redis(deployment.sentinels(), "mymaster", options);
  swl::LimiterOptions fail_closed;
  fail_closed.on_failure = swl::FailurePolicy::deny;
  swl::SlidingWindowLimiter<swl::PrefixKey, RememberedMember> limiter(redis, swl::Limit{kLimit, kWindow}, fail_closed);

  struct Call {
    Clock::time_point before, after;
    bool admitted;
    bool by_policy;
    std::string member;
  };
  std::mutex mutex;
  std::vector<Call> calls;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&] {
      while (!stop) {
        const auto before = Clock::now();
        const swl::Decision decision = limiter.tryAcquire("hot");
        const auto after = Clock::now();
        {
          std::lock_guard<std::mutex> lock(mutex);
          calls.push_back({before, after, decision.allowed && decision.tier == swl::Tier::redis,
                           decision.tier != swl::Tier::redis, RememberedMember::last()});
        }
        std::this_thread::sleep_until(before + pause);
      }
    });
  }

  FailoverResult result;
  result.limit = kLimit;
  std::this_thread::sleep_for(kWindow / 2 + std::chrono::seconds(1));  // the window is full by now
  auto sentinel = deployment.connectToSentinel(0);
  const auto failover_at = Clock::now();
  if (textReply(sentinel, {"SENTINEL", "FAILOVER", "mymaster"}) != "OK") {
    throw std::runtime_error("SENTINEL FAILOVER was refused");
  }
  deployment.waitUntilMasterIs(replica, std::chrono::seconds(15));
  result.switch_took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - failover_at);
  std::this_thread::sleep_for(after_switch);
  stop = true;
  for (std::thread& thread : threads) thread.join();
  const auto stopped_at = Clock::now();

  std::vector<Call> admitted;
  for (const Call& call : calls) {
    if (call.admitted) admitted.push_back(call);
    if (call.by_policy) ++result.refused_by_policy;
  }
  result.admitted = static_cast<long long>(admitted.size());
  std::sort(admitted.begin(), admitted.end(), [](const Call& a, const Call& b) { return a.before < b.before; });
  for (std::size_t first = 0; first < admitted.size(); ++first) {
    long long inside = 0;
    for (std::size_t i = first; i < admitted.size(); ++i) {
      if (admitted[i].after < admitted[first].before + kWindow) ++inside;
    }
    result.most_in_a_window = std::max(result.most_in_a_window, inside);
  }

  // Entries younger than the window minus a margin cannot have been trimmed yet: each must be there.
  auto promoted = deployment.connectToNode(replica);
  const std::string key = limiter.redisKey("hot");
  for (const Call& call : admitted) {
    if (call.after < stopped_at - kWindow + std::chrono::milliseconds(500)) continue;
    ++result.checked;
    const swl::Reply score = promoted.command({"ZSCORE", key, call.member});
    if (score->isNil()) ++result.lost;
  }
  return result;
}

}  // namespace swl::test
