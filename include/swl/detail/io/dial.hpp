#pragma once
// The one way swl opens a connection to Redis. Every client dials through here (Connection, the pool,
// every cluster node, Sentinel's sentinels and master, the async connection), so a way of connecting
// (TCP, a unix socket, TLS) and its options are written once.
//
//   detail::Dialer dialer(options);             // once per client: checks options, loads TLS files
//   ContextPtr context = dialer.dial(address);  // per connection, to any server

#include <swl/connection_options.hpp>
#include <swl/detail/io/checked_options.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/io/tls.hpp>
#include <swl/error.hpp>

#include <hiredis/async.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

namespace swl::detail {

// A context made elsewhere (dialled below, or by a user's factory), checked and given the command
// timeout. Throws ConnectionError (TimeoutError) naming `endpoint`.
inline ContextPtr ready(ContextPtr context, const std::string& endpoint, const ConnectionOptions& options) {
  if (!context) throw redisError<ConnectionError>(endpoint, " failed connecting (out of memory)");
  if (context->err != 0) throwContextError(*context, endpoint, "connecting");
  if (context->reader != nullptr) limitAggregates(*context->reader);
  if (options.command_timeout.count() > 0 &&
      redisSetTimeout(context.get(), toTimeval(options.command_timeout)) != REDIS_OK) {
    throw redisError<ConnectionError>(endpoint, ": cannot set the command timeout");
  }
  return context;
}

// How a client reaches its servers, as its ConnectionOptions say: made once per client (checking the
// options and loading the TLS files), then asked for every connection, to whichever server.
class Dialer {
 public:
  explicit Dialer(const ConnectionOptions& options)
      : options_(checkedOptions(options)), tls_(tlsContextFor(options.tls)) {}

  // A blocking context to `address`, connected (and its TLS handshake done) within the connect
  // timeout, with the command timeout set on it. Throws ConnectionError (TimeoutError, TlsError)
  // naming the endpoint.
  ContextPtr dial(const Address& address) const {
    errno = 0;
    const bool unix_socket = !address.unix_path.empty();
    requireTcpForTls(address);
    const timeval connect_timeout = toTimeval(options_.connect_timeout);
    ContextPtr context;
    if (options_.connect_timeout.count() == 0) {
      context.reset(unix_socket ? redisConnectUnix(address.unix_path.c_str())
                                : redisConnect(address.host.c_str(), address.port));
    } else {
      context.reset(unix_socket ? redisConnectUnixWithTimeout(address.unix_path.c_str(), connect_timeout)
                                : redisConnectWithTimeout(address.host.c_str(), address.port, connect_timeout));
    }
    if (tls_ && context && context->err == 0) {
      // A server that accepts TCP and then says nothing (frozen) must not hold the handshake longer.
      if (options_.connect_timeout.count() > 0) redisSetTimeout(context.get(), connect_timeout);
      tls_->secure(*context, address);
    }
    return ready(std::move(context), address.endpoint(), options_);
  }

  // An async context to `address`, connecting in the background (TLS included); the caller owns it
  // (redisAsyncFree) and learns of a failed connect from context->err or its connect callback.
  redisAsyncContext* dialAsync(const Address& address) const {
    requireTcpForTls(address);
    redisAsyncContext* context = address.unix_path.empty() ? redisAsyncConnect(address.host.c_str(), address.port)
                                                           : redisAsyncConnectUnix(address.unix_path.c_str());
    if (context == nullptr) throw redisError<ConnectionError>(address.endpoint(), " failed connecting (out of memory)");
    if (context->c.reader != nullptr) limitAggregates(*context->c.reader);
    if (tls_ && context->err == 0) {
      try {
        tls_->secure(context->c, address);
      } catch (...) {
        redisAsyncFree(context);
        throw;
      }
    }
    return context;
  }

  const ConnectionOptions& options() const noexcept { return options_; }

 private:
  void requireTcpForTls(const Address& address) const {
    if (tls_ && !address.unix_path.empty()) {
      throw InvalidArgument("swl::TlsOptions: TLS is enabled, but " + address.endpoint() +
                            " is a unix socket; Redis serves TLS on TCP only");
    }
  }

  ConnectionOptions options_;
  std::shared_ptr<const TlsContext> tls_;
};

}  // namespace swl::detail
