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

#include <swl/connection.hpp>
#include <swl/connection_options.hpp>
#include <swl/connection_pool.hpp>
#include <swl/detail/cluster_replies.hpp>
#include <swl/detail/hiredis.hpp>
#include <swl/error.hpp>
#include <swl/redis_client.hpp>
#include <swl/script.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

struct SentinelAddress {
  std::string host;
  int port = 0;
};

struct SentinelOptions {
  ConnectionOptions sentinel;  // for the sentinels: timeouts, their requirepass; db must stay 0
  ConnectionOptions master;    // for the master: timeouts, user/password, db
  PoolOptions pool;            // connections to the master
};

namespace detail {

// The answer to SENTINEL get-master-addr-by-name: the master's [host, port], or nothing when this
// sentinel does not know `master_name`. Throws AuthError (the sentinel wants a password), ReplyError (it
// refused the command) or ProtocolError (an answer of another shape), each naming the sentinel.
inline std::optional<NodeAddress> parseMasterAddress(const redisReply& reply, const std::string& sentinel,
                                                     const std::string& master_name) {
  if (reply.type == REDIS_REPLY_NIL) return std::nullopt;
  if (isErrorReply(reply, "NOAUTH")) {
    throw AuthError("sentinel " + sentinel + " requires authentication: " + std::string(replyText(reply)));
  }
  if (reply.type == REDIS_REPLY_ERROR) {
    throw ReplyError("sentinel " + sentinel + " refused SENTINEL get-master-addr-by-name " + master_name + ": " +
                     std::string(replyText(reply)));
  }
  const auto malformed = [&](std::string_view why) {
    return ProtocolError("sentinel " + sentinel + " answered SENTINEL get-master-addr-by-name " + master_name +
                         " with " + std::string(why) + ", not [host, port]");
  };
  if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 2) throw malformed("a reply of another shape");
  const redisReply& host = *reply.element[0];
  const redisReply& port = *reply.element[1];
  if (host.type != REDIS_REPLY_STRING || port.type != REDIS_REPLY_STRING || replyText(host).empty()) {
    throw malformed("an array of other elements");
  }
  const std::optional<int> port_number = parsePort(replyText(port));
  if (!port_number) throw malformed("the port '" + std::string(replyText(port)) + "'");
  return NodeAddress{std::string(replyText(host)), *port_number};
}

}  // namespace detail

class SentinelConnection : public RedisClient {
 public:
  SentinelConnection(const std::vector<SentinelAddress>& sentinels, std::string master_name,
                     SentinelOptions options = {})
      : sentinels_(std::make_shared<Sentinels>(sentinels, std::move(master_name), options.sentinel)),
        pool_(
            [&] {
              const timeval connect_timeout = detail::toTimeval(options.master.connect_timeout);
              return Connection::adopt(
                  [sentinels = sentinels_, connect_timeout]() -> redisContext* {
                    const detail::NodeAddress master = sentinels->askForMaster();
                    return redisConnectWithTimeout(master.host.c_str(), master.port, connect_timeout);
                  },
                  sentinels_->description(), options.master);
            },
            options.pool) {}

  SentinelConnection(const SentinelConnection&) = delete;
  SentinelConnection& operator=(const SentinelConnection&) = delete;

  using RedisClient::run;
  detail::ReplyPtr run(const ScriptCall& call) override {
    ConnectionPool::Lease lease = pool_.borrow();
    detail::ReplyPtr reply = lease->evaluate(call);
    if (demoted(*reply)) {
      lease->disconnect();
      reply = lease->evaluate(call);
    }
    if (reply->type == REDIS_REPLY_ERROR) throw detail::scriptError(lease->endpoint(), call.script(), *reply);
    return reply;
  }

  std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) override {
    ConnectionPool::Lease lease = pool_.borrow();
    std::vector<ScriptReply> results = lease->evaluateMany(calls);
    // A demotion may land mid-batch: the calls answered before it ran on the master and stay answered.
    std::vector<std::size_t> refused;
    std::vector<ScriptCall> again;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (results[i].reply && demoted(*results[i].reply)) refused.push_back(i), again.push_back(calls[i]);
    }
    if (!again.empty()) {
      lease->disconnect();
      std::vector<ScriptReply> retried = lease->evaluateMany(again);
      for (std::size_t i = 0; i < refused.size(); ++i) results[refused[i]] = std::move(retried[i]);
    }
    for (std::size_t i = 0; i < calls.size(); ++i) {
      ScriptReply& result = results[i];
      if (result.reply && result.reply->type == REDIS_REPLY_ERROR) {
        result.error =
            std::make_exception_ptr(detail::scriptError(lease->endpoint(), calls[i].script(), *result.reply));
        result.reply.reset();
      }
    }
    return results;
  }

  // "host:port" of the master, asked of the sentinels now. Throws like a call that could not connect.
  std::string masterAddress() { return sentinels_->askForMaster().endpoint(); }

 private:
  // The sentinels and one connection to each, shared by the pool's connection factories; one thread
  // asks at a time, since an answer is needed only when a connection to the master (re)connects.
  class Sentinels {
   public:
    Sentinels(const std::vector<SentinelAddress>& sentinels, std::string master_name, const ConnectionOptions& options)
        : master_name_(std::move(master_name)) {
      static constexpr std::string_view kWho = "swl::SentinelConnection";
      if (sentinels.empty()) throw InvalidArgument(std::string(kWho) + ": no sentinel given");
      if (master_name_.empty()) throw InvalidArgument(std::string(kWho) + ": the master name is empty");
      if (options.db != 0) {
        throw InvalidArgument("swl::SentinelOptions: sentinel.db is " + std::to_string(options.db) +
                              "; sentinels have no databases, set master.db instead");
      }
      for (const SentinelAddress& sentinel : sentinels) {
        const std::string endpoint = detail::tcpEndpoint(kWho, sentinel.host, sentinel.port);
        endpoints_ += (endpoints_.empty() ? "" : ", ") + endpoint;
        connections_.push_back(Connection::tcp(sentinel.host, sentinel.port, options));
      }
    }

    // Throws AuthError when a sentinel refused our credentials (and none answered), ProtocolError when
    // one answered nonsense, ConnectionError otherwise; the message names every sentinel's trouble.
    detail::NodeAddress askForMaster() {
      std::lock_guard<std::mutex> lock(mutex_);
      std::string troubles;
      bool refused_credentials = false, answered_nonsense = false;
      for (std::size_t tried = 0; tried < connections_.size(); ++tried) {
        const std::size_t index = (first_ + tried) % connections_.size();
        Connection& sentinel = connections_[index];
        try {
          const detail::ReplyPtr reply = sentinel.command({"SENTINEL", "get-master-addr-by-name", master_name_});
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
  static bool demoted(const redisReply& reply) noexcept { return detail::isErrorReply(reply, "READONLY"); }

  std::shared_ptr<Sentinels> sentinels_;  // before pool_: its connections' factories hold it
  ConnectionPool pool_;
};

}  // namespace swl
