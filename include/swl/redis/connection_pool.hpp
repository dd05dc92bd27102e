#pragma once
/// \file
/// ConnectionPool: a bounded set of Connections that any number of threads share. A limiter built on a
/// pool may be called from every thread at once; each call borrows one connection for its round trip.
///
///   auto pool = swl::ConnectionPool::tcp("127.0.0.1", 6379, swl::PoolOptions{8});
///   swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{100, std::chrono::seconds(10)});
///
/// Connections open lazily, on first use, and the most recently returned one is lent first, so a pool
/// holds only as many open connections as calls were ever in flight at once. A connection whose context
/// broke (error, timeout, closed by the server) never sends on it again: its next use opens a new one.
/// When every connection is lent, borrowing waits up to `borrow_timeout`, then throws TimeoutError,
/// which a limiter hands to its failure policy like any other "Redis could not answer". All connections
/// share one circuit breaker: once one times out, calls on every connection fail at once for the cool-down.

#include <swl/detail/io/circuit_breaker.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/connection.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace swl {

/// How many connections a ConnectionPool keeps, and how long a call waits for a free one.
struct PoolOptions {
  /// Connections in the pool, made up front (at least 1).
  std::size_t size = 8;
  /// How long a call waits for a free connection before a TimeoutError.
  std::chrono::milliseconds borrow_timeout{100};
};

class ConnectionPool;
namespace detail {
// For the clients built on pools (cluster, Sentinel): the breaker its connections share.
inline const std::shared_ptr<CircuitBreaker>& breakerOf(ConnectionPool& pool) noexcept;
}  // namespace detail

/// A bounded set of Connections that any number of threads share (connection_pool.hpp says how).
class ConnectionPool : public RedisClient {
 public:
  /// A connection lent to one thread; it goes back to the pool when this is destroyed.
  class BorrowedConnection {
   public:
    /// Takes over `other`'s loan; `other` then returns nothing to the pool.
    BorrowedConnection(BorrowedConnection&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), index_(other.index_) {}
    /// Only moved into place: one loan, one holder.
    ///@{
    BorrowedConnection& operator=(BorrowedConnection&&) = delete;
    BorrowedConnection(const BorrowedConnection&) = delete;
    ///@}
    /// Gives the connection back to the pool.
    ~BorrowedConnection() {
      if (pool_ != nullptr) pool_->putBack(index_);
    }

    /// The connection lent.
    Connection& operator*() const noexcept { return pool_->connections_[index_]; }
    /// The connection lent, for `borrowed->command(...)`.
    Connection* operator->() const noexcept { return &**this; }

   private:
    friend class ConnectionPool;
    BorrowedConnection(ConnectionPool& pool, std::size_t index) : pool_(&pool), index_(index) {}

    ConnectionPool* pool_;
    std::size_t index_;
  };

  /// `make_connection` is called `options.size` times, up front; Connections connect lazily, so this
  /// costs no round trip and a pool can be built while Redis is down.
  ConnectionPool(const std::function<Connection()>& make_connection, PoolOptions options = {}) : options_(options) {
    if (options_.size == 0) throw InvalidArgument("swl::PoolOptions: size is 0; a pool needs a connection");
    if (options_.borrow_timeout.count() < 0) throw InvalidArgument("swl::PoolOptions: borrow_timeout is negative");
    connections_.reserve(options_.size);
    idle_.reserve(options_.size);
    for (std::size_t i = 0; i < options_.size; ++i) {
      connections_.push_back(make_connection());
      idle_.push_back(options_.size - 1 - i);  // lend connection 0 first
      // One server, one circuit: a timeout on one connection answers the calls on all of them at once.
      detail::linkOf(connections_.back()).shareBreaker(detail::linkOf(connections_.front()).breaker());
    }
  }

  /// A pool of connections to host:port, none dialled yet.
  static ConnectionPool tcp(std::string host, int port, PoolOptions pool_options = {}, ConnectionOptions options = {}) {
    return ConnectionPool([&] { return Connection::tcp(host, port, options); }, pool_options);
  }

  /// A pool of connections over the unix socket at `path`, none dialled yet.
  static ConnectionPool unixSocket(std::string path, PoolOptions pool_options = {}, ConnectionOptions options = {}) {
    return ConnectionPool([&] { return Connection::unixSocket(path, options); }, pool_options);
  }

  /// Neither copied nor moved: limiters and lent connections refer to it.
  ///@{
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;
  ///@}

  /// Waits up to borrow_timeout for a free connection.
  BorrowedConnection borrow() { return borrow(options_.borrow_timeout); }

  /// Waits up to `within`, or borrow_timeout if that is shorter: for a caller whose own time is running out.
  BorrowedConnection borrow(std::chrono::milliseconds within) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!returned_.wait_for(lock, std::min(within, options_.borrow_timeout), [&] { return !idle_.empty(); })) {
      throw TimeoutError("swl::ConnectionPool to " + connections_.front().endpoint() + ": all " +
                         std::to_string(connections_.size()) + " connections stayed in use for " +
                         std::to_string(options_.borrow_timeout.count()) + " ms");
    }
    const std::size_t index = idle_.back();
    idle_.pop_back();
    return BorrowedConnection(*this, index);
  }

  using RedisClient::run;
  Reply run(const ScriptCall& call) override { return borrowUnlessOpen()->run(call); }

  std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) override {
    return borrowUnlessOpen()->runMany(calls);
  }

  /// How many connections the pool holds, lent or not.
  std::size_t size() const noexcept { return connections_.size(); }

  /// Connections not lent right now.
  std::size_t idle() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return idle_.size();
  }

 private:
  friend const std::shared_ptr<detail::CircuitBreaker>& detail::breakerOf(ConnectionPool& pool) noexcept;

  // While the server's circuit is open a call is refused before it waits for a connection.
  BorrowedConnection borrowUnlessOpen() {
    detail::breakerOf(*this)->refuseWhileOpen(connections_.front().endpoint());
    return borrow();
  }

  void putBack(std::size_t index) noexcept {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      idle_.push_back(index);
    }
    returned_.notify_one();
  }

  PoolOptions options_;
  std::vector<Connection> connections_;  // never resized after construction: borrowed connections index into it
  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::size_t> idle_;  // a stack: the connection returned last is lent next, already open
};

inline const std::shared_ptr<detail::CircuitBreaker>& detail::breakerOf(ConnectionPool& pool) noexcept {
  return detail::linkOf(pool.connections_.front()).breaker();
}

}  // namespace swl
