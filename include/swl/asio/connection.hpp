#pragma once
/// \file
/// AsioConnection: one hiredis async context on an Asio executor (and AsioConnectionPool, several), for the services
/// that run on Asio (Boost.Beast, asio-grpc, anything written with co_await). What AsioLimiter (asio/limiter.hpp) runs
/// on.
///
///   asio::io_context io;
///   auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", 6379);
///   swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{100, std::chrono::seconds(10)});
///
/// The same promises as the blocking Connection: EVALSHA only; NOSCRIPT loads the script and repeats that
/// call once; nothing else is ever sent twice. Its work runs on a strand of the executor, so any thread may
/// start calls and any number of threads may run the io_context. The socket is hiredis's: Asio watches it
/// through a posix::stream_descriptor and never closes it.
///
/// Every call has a deadline (by default now + ConnectionOptions::command_timeout). A call past it ends
/// with a TimeoutError, and its reply, when it comes, is dropped: the connection stays up for the calls
/// behind it (hiredis's own timeout would fail them all), unless no reply comes connect_timeout + 4 x
/// command_timeout past the deadline: then the server is taken for gone and the connection dropped. A
/// lost connection fails the calls on it; the next call connects again, after the circuit breaker's
/// cool-down when connecting failed (ConnectionOptions::breaker_cooldown). TLS needs hiredis 1.x, as for
/// every connection.
///
/// Needs Asio (Debian libasio-dev, or libboost-dev with SWL_USE_BOOST_ASIO: asio/backend.hpp) and the
/// CMake target swl::asio (or swl::boost_asio).

#include <swl/asio/backend.hpp>
#include <swl/asio/detail/session.hpp>
#include <swl/connection_options.hpp>
#include <swl/error.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace swl {

/// One hiredis async context on an Asio executor (asio/connection.hpp says how it times calls out and
/// reconnects). A handle, movable. Destroying it closes the connection (close()). Like every Asio I/O
/// object it goes before its io_context; an io_context destroyed first (or shut down) ends the calls still
/// in flight without running their handlers, and frees the connection.
class AsioConnection {
 public:
  /// The strand every call's work runs on.
  using executor_type = detail::AsioSession::Strand;

  /// A connection to host:port, made on `executor`'s next turns; calls made before then wait for it.
  static AsioConnection tcp(const asio::any_io_executor& executor, std::string host, int port,
                            ConnectionOptions options = {}) {
    return AsioConnection(executor, Address{std::move(host), port}, options);
  }
  /// A connection over the Unix socket at `path`, as tcp() makes one.
  static AsioConnection unixSocket(const asio::any_io_executor& executor, std::string path,
                                   ConnectionOptions options = {}) {
    return AsioConnection(executor, Address::unixSocket(std::move(path)), options);
  }

  /// Movable: a handle moved from holds no connection (using it throws InvalidArgument); one moved onto
  /// closes its own first.
  ///@{
  AsioConnection(AsioConnection&&) noexcept = default;
  AsioConnection& operator=(AsioConnection&& other) noexcept {
    if (this != &other) {
      close();
      session_ = std::move(other.session_);
    }
    return *this;
  }
  ///@}
  /// Closes the connection (close()).
  ~AsioConnection() { close(); }

  /// Closes the connection for good, from any thread: the calls in flight end with a ConnectionError,
  /// and so do later ones, the calls of limiters made over it afterwards included; each gets its failure
  /// policy's answer (under FailurePolicy::deny at its deadline, before which Redis might still run it).
  /// The handle stays valid.
  void close() {
    if (!session_) return;
    asio::dispatch(session_->strand(), [session = session_] { session->close(); });
  }

  /// The strand its calls run on (Asio's name, so that the connection works wherever an executor is asked).
  executor_type get_executor() const { return held().strand(); }
  /// "host:port" or "unix:/path": how messages name the server.
  const std::string& endpoint() const { return held().endpoint(); }

  /// For AsioLimiter: the state every call shares.
  const std::shared_ptr<detail::AsioSession>& session() const {
    held();
    return session_;
  }

 private:
  friend class AsioConnectionPool;

  AsioConnection(const asio::any_io_executor& executor, const Address& address, const ConnectionOptions& options,
                 std::shared_ptr<detail::CircuitBreaker> breaker = nullptr)
      : session_(detail::AsioSession::make(executor, address, options, std::move(breaker))) {}

  detail::AsioSession& held() const {
    if (!session_) throw InvalidArgument("swl::AsioConnection: this handle was moved from and holds no connection");
    return *session_;
  }

  std::shared_ptr<detail::AsioSession> session_;
};

/// Several AsioConnections to one server, for a limiter whose calls are more than one connection's worth
/// (one hiredis context, one strand, is one core's): AsioLimiter spreads its calls over them in turn.
/// They share one circuit breaker, as a blocking ConnectionPool's connections do.
///
///   std::vector<asio::io_context> loops(4);   // one per core, each run by its own thread
///   auto redis = swl::AsioConnectionPool::tcp({loops[0].get_executor(), ...}, "127.0.0.1", 6379);
class AsioConnectionPool {
 public:
  /// `size` connections to host:port, each on a strand of its own of `executor` (an io_context that
  /// several threads run).
  static AsioConnectionPool tcp(const asio::any_io_executor& executor, const std::string& host, int port,
                                std::size_t size, const ConnectionOptions& options = {}) {
    return AsioConnectionPool(std::vector<asio::any_io_executor>(size, executor), Address{host, port}, options);
  }
  /// A connection to host:port on each of `executors` (one io_context per core, say).
  static AsioConnectionPool tcp(const std::vector<asio::any_io_executor>& executors, const std::string& host, int port,
                                const ConnectionOptions& options = {}) {
    return AsioConnectionPool(executors, Address{host, port}, options);
  }

  /// Closes every connection, from any thread.
  void close() {
    for (AsioConnection& connection : connections_) connection.close();
  }
  /// How many connections the pool holds.
  std::size_t size() const noexcept { return connections_.size(); }
  /// The connections, in the order a limiter takes them.
  const std::vector<AsioConnection>& connections() const noexcept { return connections_; }

 private:
  AsioConnectionPool(const std::vector<asio::any_io_executor>& executors, const Address& address,
                     const ConnectionOptions& options) {
    if (executors.empty()) throw InvalidArgument("swl::AsioConnectionPool: a pool needs at least one connection");
    const auto breaker = detail::breakerFor(options);
    connections_.reserve(executors.size());
    for (const asio::any_io_executor& executor : executors) {
      connections_.push_back(AsioConnection(executor, address, options, breaker));
    }
  }

  std::vector<AsioConnection> connections_;
};

}  // namespace swl
