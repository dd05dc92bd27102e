#pragma once
/// \file
/// SentinelConnection: a master that Redis Sentinel watches, behind the RedisClient interface, so the
/// limiters follow its failovers unchanged: the user swaps the connection, not the code.
///
///   swl::SentinelOptions options;
///   options.master.password = master_password;
///   swl::SentinelConnection redis({{"10.0.0.1", 26379}, {"10.0.0.2", 26379}}, "mymaster", options);
///   swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{100, std::chrono::seconds(10)});
///
/// Calls travel on a pool of connections to the master (see ConnectionPool), so any number of threads may
/// share one SentinelConnection. A connection asks the sentinels where the master is whenever it
/// (re)connects (SENTINEL get-master-addr-by-name), one sentinel after another until one answers; the
/// sentinel that answered is asked first next time. Nothing is dialled before the first call, so a service
/// may start while Redis is down and let its failure policy answer.
///
/// How a failover reaches the calls:
/// - Announcements (SentinelOptions::follow_announcements, on by default). A thread subscribes to every
///   sentinel's failover channels. The leader announces the replica it will promote (+selected-slave)
///   before it promotes it; from that moment no call goes to the old master, which Redis leaves writable
///   for about ten seconds after a planned switch (SENTINEL FAILOVER), and whose entries would be lost
///   when it resyncs. Calls go to the chosen replica instead, which answers READONLY until it is
///   promoted, moments later: a replica refuses a write before recording anything, so the call is simply
///   asked again, within its command timeout. +promoted-slave and +switch-master confirm the new master,
///   and a -failover-abort-* sends the calls back to the old one. Every open connection to the old master
///   is dropped before its next command. What can still be lost is what the old master took and had not
///   yet replicated when the replica was promoted: milliseconds of writes. ConnectionOptions::replica_acks
///   (WAIT) loses none of what it acknowledged, at the price of a replication round trip per call.
/// - The master died: the calls in flight fail with ConnectionError and are not repeated (they may have
///   run); later calls reach the promoted replica as soon as it is announced (or, without
///   announcements, as soon as the sentinels name it), and meet the failure policy until then.
/// - A connection still open to a demoted master answers READONLY: the connection is dropped, the
///   sentinels are asked again, and the call goes again, within its command timeout.

#include <swl/connection_options.hpp>
#include <swl/detail/io/batch.hpp>
#include <swl/detail/io/checked_options.hpp>
#include <swl/detail/io/dial.hpp>
#include <swl/detail/io/sentinel_state.hpp>
#include <swl/detail/io/topology.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/connection_pool.hpp>

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace swl {

/// How a SentinelConnection reaches the sentinels and the master they name.
struct SentinelOptions {
  ConnectionOptions sentinel;  ///< for the sentinels: timeouts, their requirepass; db must stay 0
  ConnectionOptions master;    ///< for the master: timeouts, user/password, db, replica_acks
  PoolOptions pool;            ///< connections to the master
  /// Subscribe to the sentinels' failover announcements (one thread), so that no call goes to a master
  /// the sentinels are replacing. Off: the master is found only by asking, on (re)connects and READONLY.
  bool follow_announcements = true;
};

/// A master that Redis Sentinel watches, as one RedisClient that follows its failovers
/// (sentinel_connection.hpp says how).
class SentinelConnection : public RedisClient {
 public:
  /// The master the `sentinels` know as `master_name`; it is asked for on the first call, not here.
  SentinelConnection(const std::vector<Address>& sentinels, std::string master_name, SentinelOptions options = {})
      : state_(std::make_shared<detail::SentinelState>(sentinels, std::move(master_name), options.sentinel)),
        pool_(
            [&] {
              Connection master = Connection::adopt(
                  [state = state_, dialer = detail::Dialer(options.master)] {
                    return dialer.dial(state->master()).release();
                  },
                  state_->description(), options.master);
              detail::linkOf(master).followEpoch([state = state_] { return state->epoch(); });
              return master;
            },
            options.pool),
        command_timeout_(options.master.command_timeout) {
    if (options.follow_announcements) listener_ = std::make_unique<detail::FailoverListener>(state_, options.sentinel);
  }

  /// Neither copied nor moved: limiters refer to it.
  ///@{
  SentinelConnection(const SentinelConnection&) = delete;
  SentinelConnection& operator=(const SentinelConnection&) = delete;
  ///@}

  using RedisClient::run;
  Reply run(const ScriptCall& call) override {
    detail::breakerOf(pool_)->refuseWhileOpen(state_->description());
    ConnectionPool::BorrowedConnection lease = pool_.borrow();
    detail::Link& master = detail::linkOf(*lease);
    detail::RetryPacing pacing(deadline());
    return detail::runToAnswer(master, call, master.evaluate(call), state_->description(),
                               [&](ReplyView reply) { return demoted(reply) && askAgainAfter(master, pacing); });
  }

  std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) override {
    detail::breakerOf(pool_)->refuseWhileOpen(state_->description());
    ConnectionPool::BorrowedConnection lease = pool_.borrow();
    detail::Link& master = detail::linkOf(*lease);
    detail::RetryPacing pacing(deadline());
    std::vector<ScriptReply> results = detail::Batch::run(master, calls);
    // A demotion may land mid-batch: the calls answered before it ran on the master and stay answered.
    for (;;) {
      std::vector<std::size_t> refused;
      std::vector<ScriptCall> again;
      for (std::size_t i = 0; i < calls.size(); ++i) {
        if (results[i].reply && demoted(*results[i].reply)) refused.push_back(i), again.push_back(calls[i]);
      }
      if (again.empty() || !askAgainAfter(master, pacing)) break;
      std::vector<ScriptReply> retried = detail::Batch::run(master, again);
      for (std::size_t i = 0; i < refused.size(); ++i) results[refused[i]] = std::move(retried[i]);
    }
    return detail::errorRepliesAsErrors(std::move(results), master.endpoint(), calls);
  }

  /// "host:port" of the master, asked of the sentinels now. Throws like a call that could not connect.
  std::string masterAddress() { return state_->askForMaster().endpoint(); }

 private:
  using Clock = std::chrono::steady_clock;

  // A replica refuses a write before recording anything (a script without flags runs until its first
  // write and stops there), so the call may go again, to wherever the master is now.
  static bool demoted(ReplyView reply) noexcept { return reply.isError("READONLY"); }

  // After READONLY: drops the connection and pauses, so the call can go again; false when its time is up.
  bool askAgainAfter(detail::Link& master, detail::RetryPacing& pacing) {
    state_->refusedWrites();
    master.disconnect();
    const auto pause = pacing.next(Clock::now());
    if (pause) std::this_thread::sleep_for(*pause);
    return pause.has_value();
  }

  Clock::time_point deadline() const {
    return Clock::now() + (command_timeout_.count() > 0 ? command_timeout_ : std::chrono::milliseconds(1000));
  }

  std::shared_ptr<detail::SentinelState> state_;  // before pool_: its connections' factories hold it
  ConnectionPool pool_;
  std::chrono::milliseconds command_timeout_;
  std::unique_ptr<detail::FailoverListener> listener_;  // last: it stops first
};

}  // namespace swl
