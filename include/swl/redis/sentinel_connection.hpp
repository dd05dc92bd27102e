#pragma once
// SentinelConnection: a master that Redis Sentinel watches, behind the RedisClient interface, so the
// limiters follow its failovers unchanged: the user swaps the connection, not the code.
//
//   swl::SentinelOptions options;
//   options.master.password = master_password;
//   swl::SentinelConnection redis({{"10.0.0.1", 26379}, {"10.0.0.2", 26379}}, "mymaster", options);
//   swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{100, std::chrono::seconds(10)});
//
// Calls travel on a pool of connections to the master (see ConnectionPool), so any number of threads may
// share one SentinelConnection. Each of those connections asks the sentinels where the master is whenever
// it (re)connects (SENTINEL get-master-addr-by-name), one sentinel after another until one answers; the
// sentinel that answered is asked first next time. Nothing is dialled before the first call, so a service
// may start while Redis is down and let its failure policy answer.
//
// How a failover reaches the calls:
// - the master died: the calls in flight fail with ConnectionError and are not repeated (they may have
//   run); later calls reconnect, each time to whatever the sentinels name, so they reach the promoted
//   replica as soon as the sentinels have chosen it, and meet the failure policy until then;
// - the master was demoted while our connection stayed open: it answers READONLY. A replica records
//   nothing, so that connection is dropped, the sentinels are asked again, and the call is repeated once.
//   Sentinel itself closes every client of an instance it demotes, which the first case covers.
// After a planned switch (SENTINEL FAILOVER) the old master stays a writable master for some seconds
// (about ten in our tests) until Sentinel demotes it and closes its clients: a connection that stayed
// open to it keeps counting there meanwhile, and those entries vanish when it resyncs from the new
// master, so a limiter may admit them again.

#include <swl/error.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/connection_options.hpp>
#include <swl/redis/connection_pool.hpp>
#include <swl/redis/dial.hpp>
#include <swl/redis/topology.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

struct SentinelOptions {
  ConnectionOptions sentinel;  // for the sentinels: timeouts, their requirepass; db must stay 0
  ConnectionOptions master;    // for the master: timeouts, user/password, db
  PoolOptions pool;            // connections to the master
};

class SentinelConnection : public RedisClient {
 public:
  SentinelConnection(const std::vector<Address>& sentinels, std::string master_name, SentinelOptions options = {})
      : sentinels_(std::make_shared<Sentinels>(sentinels, std::move(master_name), options.sentinel)),
        pool_(
            [&] {
              return Connection::adopt(
                  [sentinels = sentinels_, master = options.master] {
                    return detail::dial(sentinels->askForMaster(), master).release();
                  },
                  sentinels_->description(), options.master);
            },
            options.pool) {}

  SentinelConnection(const SentinelConnection&) = delete;
  SentinelConnection& operator=(const SentinelConnection&) = delete;

  using RedisClient::run;
  Reply run(const ScriptCall& call) override {
    ConnectionPool::Lease lease = pool_.borrow();
    detail::Link& master = detail::linkOf(*lease);
    Reply reply = master.evaluate(call);
    if (demoted(*reply)) {
      master.disconnect();
      reply = master.evaluate(call);
    }
    return detail::judged(std::move(reply), master.endpoint(), call.script());
  }

  std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) override {
    ConnectionPool::Lease lease = pool_.borrow();
    detail::Link& master = detail::linkOf(*lease);
    std::vector<ScriptReply> results = master.evaluateMany(calls);
    // A demotion may land mid-batch: the calls answered before it ran on the master and stay answered.
    std::vector<std::size_t> refused;
    std::vector<ScriptCall> again;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (results[i].reply && demoted(*results[i].reply)) refused.push_back(i), again.push_back(calls[i]);
    }
    if (!again.empty()) {
      master.disconnect();
      std::vector<ScriptReply> retried = master.evaluateMany(again);
      for (std::size_t i = 0; i < refused.size(); ++i) results[refused[i]] = std::move(retried[i]);
    }
    return detail::judged(std::move(results), master.endpoint(), calls);
  }

  // "host:port" of the master, asked of the sentinels now. Throws like a call that could not connect.
  std::string masterAddress() { return sentinels_->askForMaster().endpoint(); }

 private:
  // The sentinels and one connection to each, shared by the pool's connection factories; one thread
  // asks at a time, since an answer is needed only when a connection to the master (re)connects.
  class Sentinels {
   public:
    Sentinels(const std::vector<Address>& sentinels, std::string master_name, const ConnectionOptions& options)
        : master_name_(std::move(master_name)) {
      static constexpr std::string_view kWho = "swl::SentinelConnection";
      if (sentinels.empty()) throw InvalidArgument(std::string(kWho) + ": no sentinel given");
      if (master_name_.empty()) throw InvalidArgument(std::string(kWho) + ": the master name is empty");
      if (options.db != 0) {
        throw InvalidArgument("swl::SentinelOptions: sentinel.db is " + std::to_string(options.db) +
                              "; sentinels have no databases, set master.db instead");
      }
      for (const Address& sentinel : sentinels) {
        endpoints_ += (endpoints_.empty() ? "" : ", ") + detail::checkedAddress(kWho, sentinel).endpoint();
        connections_.push_back(Connection::to(sentinel, options));
      }
    }

    // Throws AuthError when a sentinel refused our credentials (and none answered), ProtocolError when
    // one answered nonsense, ConnectionError otherwise; the message names every sentinel's trouble.
    Address askForMaster() {
      std::lock_guard<std::mutex> lock(mutex_);
      std::string troubles;
      bool refused_credentials = false, answered_nonsense = false;
      for (std::size_t tried = 0; tried < connections_.size(); ++tried) {
        const std::size_t index = (first_ + tried) % connections_.size();
        Connection& sentinel = connections_[index];
        try {
          const Reply reply = sentinel.command({"SENTINEL", "get-master-addr-by-name", master_name_});
          if (auto master = detail::parseMasterAddress(*reply, sentinel.endpoint(), master_name_)) {
            first_ = index;
            return *std::move(master);
          }
          troubles += (troubles.empty() ? "" : "; ") + ("sentinel " + sentinel.endpoint() + " does not know it");
        } catch (const AuthError& error) {
          refused_credentials = true;
          troubles += (troubles.empty() ? "" : "; ") + std::string(error.what());
        } catch (const ProtocolError& error) {
          answered_nonsense = true;
          troubles += (troubles.empty() ? "" : "; ") + std::string(error.what());
        } catch (const Error& error) {
          troubles += (troubles.empty() ? "" : "; ") + std::string(error.what());
        }
      }
      const std::string message = "swl::SentinelConnection: none of the sentinels " + endpoints_ +
                                  " named the master '" + master_name_ + "': " + troubles;
      if (refused_credentials) throw AuthError(message);
      if (answered_nonsense) throw ProtocolError(message);
      throw ConnectionError(message);
    }

    // Names the master in the messages of its connections, whose address changes with every failover.
    std::string description() const { return "master '" + master_name_ + "' of sentinels " + endpoints_; }

   private:
    std::string master_name_;
    std::string endpoints_;
    std::mutex mutex_;
    std::vector<Connection> connections_;
    std::size_t first_ = 0;  // the sentinel that answered last
  };

  // A replica refuses a write before recording anything (a script without flags runs until its first
  // write and stops there), so the call may go again to the master the sentinels name now.
  static bool demoted(ReplyView reply) noexcept { return reply.isError("READONLY"); }

  std::shared_ptr<Sentinels> sentinels_;  // before pool_: its connections' factories hold it
  ConnectionPool pool_;
};

}  // namespace swl
