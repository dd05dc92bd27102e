#pragma once
/// \file
/// Connection: one hiredis context to one Redis, owned, reconnected on demand.
///
///   auto connection = swl::Connection::tcp("127.0.0.1", 6379);
///   swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(10)});
///
/// A Connection connects lazily (the first command), so a service can start while Redis is down and
/// let its limiters' failure policy answer. After any I/O error or timeout hiredis leaves the context
/// unusable, so the Connection drops it and reports the error; the next command opens a new one. After a
/// timeout or a failed connect its circuit breaker (detail/io/circuit_breaker.hpp) answers every call at
/// once for `breaker_cooldown`, so a dead or frozen Redis is neither dialled nor waited for per request.
///
/// Not thread-safe: use one Connection per thread, or a ConnectionPool for many threads. Limiters keep
/// a reference, so the Connection must outlive them; one Connection may serve any number of limiters.
///
/// The connection itself is detail::Link (detail/io/link.hpp), with the I/O that the pool, the cluster and
/// Sentinel build on; Connection is its face for users.

#include <swl/connection_options.hpp>
#include <swl/detail/io/batch.hpp>
#include <swl/detail/io/checked_options.hpp>
#include <swl/detail/io/link.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

class Connection;
namespace detail {
inline Link& linkOf(Connection& connection) noexcept;
}  // namespace detail

/// One hiredis context to one Redis, owned, connected lazily and reconnected on demand; not
/// thread-safe (connection.hpp says what it promises).
class Connection : public RedisClient {
 public:
  /// Makes a connected context for adopt(), on every (re)connect.
  using ContextFactory = std::function<redisContext*()>;

  /// A connection to host:port; nothing is dialled until the first command.
  static Connection tcp(std::string host, int port, ConnectionOptions options = {}) {
    return to(Address{std::move(host), port}, std::move(options));
  }

  /// A connection over the unix socket at `path`, dialled at the first command.
  static Connection unixSocket(std::string path, ConnectionOptions options = {}) {
    if (path.empty()) throw InvalidArgument("swl::Connection::unixSocket: the path is empty");
    return to(Address::unixSocket(std::move(path)), std::move(options));
  }

  /// A connection to `address`, TCP or unix socket, dialled at the first command.
  static Connection to(Address address, ConnectionOptions options = {}) {
    detail::checkedAddress("swl::Connection", address);
    std::string endpoint = address.endpoint();
    detail::Dialer dialer(options);  // before `options` is moved into the call below
    return Connection([address = std::move(address), dialer = std::move(dialer)] { return dialer.dial(address); },
                      std::move(endpoint), std::move(options));
  }

  /// Contexts made by the caller: `connect` is called for every (re)connect and returns a connected
  /// context that swl then owns. AUTH and SELECT from `options` are applied to it, and the command
  /// timeout; the connect timeout is the factory's business.
  static Connection adopt(ContextFactory connect, std::string description, ConnectionOptions options = {}) {
    if (!connect) throw InvalidArgument("swl::Connection::adopt: the context factory is empty");
    // The factory gets its own copies first: the arguments below are moved in an unspecified order.
    auto open = [connect = std::move(connect), description, options] {
      return detail::ready(detail::ContextPtr(connect()), description, options);
    };
    return Connection(std::move(open), std::move(description), std::move(options));
  }

  /// A single context the caller made; swl owns it from here. Once it breaks it cannot be remade, so
  /// later commands throw ConnectionError: pass a factory instead to get reconnects.
  static Connection adopt(redisContext* context, ConnectionOptions options = {}) {
    if (context == nullptr) throw InvalidArgument("swl::Connection::adopt: the context is null");
    auto handed_over = std::make_shared<detail::ContextPtr>(context);
    return adopt(
        [handed_over]() -> redisContext* {
          if (!*handed_over) throw ConnectionError("the adopted redis context broke and swl cannot remake it");
          return handed_over->release();
        },
        "adopted redis context", std::move(options));
  }

  /// Movable, so that tcp() and the other factories can return one; move it before limiters refer to it.
  ///@{
  Connection(Connection&&) noexcept = default;
  Connection& operator=(Connection&&) noexcept = default;
  ///@}

  using RedisClient::run;
  /// One call: its reply, sent again once after SCRIPT LOAD on NOSCRIPT; an error reply is thrown.
  Reply run(const ScriptCall& call) override {
    return detail::runToAnswer(link_, call, link_.evaluate(call), link_.endpoint(), [](ReplyView) { return false; });
  }

  std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) override {
    return detail::errorRepliesAsErrors(detail::Batch::run(link_, calls), link_.endpoint(), calls);
  }

  /// Round trip to check that Redis answers (connecting first if needed).
  void ping() {
    const Reply reply = link_.command({"PING"});
    if (reply->isError()) {
      throw detail::redisError<ReplyError>(link_.endpoint(), " refused PING: ", reply->text());
    }
  }

  /// Any command, for operators and tests (INFO, ZCARD, ...). Error replies are replies, not exceptions;
  /// arguments are binary-safe. Throws ConnectionError when no reply came.
  Reply command(std::initializer_list<std::string_view> argv) { return link_.command(argv); }
  /// The same from an array of `argc` words.
  Reply command(const std::string_view* argv, std::size_t argc) { return link_.command(argv, argc); }

  /// Whether a context is open now (false before the first command and after an error).
  bool isConnected() const noexcept { return link_.isConnected(); }

  /// "host:port", "unix:/path" or the adopter's description; used in every error message.
  const std::string& endpoint() const noexcept { return link_.endpoint(); }

 private:
  friend detail::Link& detail::linkOf(Connection& connection) noexcept;

  Connection(detail::Link::Open open, std::string endpoint, ConnectionOptions options)
      : link_(std::move(open), std::move(endpoint), std::move(options)) {}

  detail::Link link_;
};

// For the clients built on connections (pool, cluster, Sentinel): the link behind a Connection.
inline detail::Link& detail::linkOf(Connection& connection) noexcept { return connection.link_; }

}  // namespace swl
