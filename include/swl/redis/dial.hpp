#pragma once
// The one way swl opens a connection to Redis. Every client dials through here (Connection, the pool,
// every cluster node, Sentinel's sentinels and master, the async connection), so a way of connecting
// (TCP, a unix socket, TLS) and its options are written once.

#include <swl/detail/hiredis.hpp>
#include <swl/error.hpp>
#include <swl/redis/connection_options.hpp>

#include <hiredis/async.h>

#include <cerrno>
#include <string>
#include <utility>

namespace swl::detail {

// A context made elsewhere (dialled below, or by a user's factory), checked and given the command
// timeout. Throws ConnectionError (TimeoutError) naming `endpoint`.
inline ContextPtr ready(ContextPtr context, const std::string& endpoint, const ConnectionOptions& options) {
  if (!context) throw ConnectionError("redis at " + endpoint + " failed connecting (out of memory)");
  if (context->err != 0) throwContextError(*context, endpoint, "connecting");
  if (context->reader != nullptr) limitAggregates(*context->reader);
  if (options.command_timeout.count() > 0 &&
      redisSetTimeout(context.get(), toTimeval(options.command_timeout)) != REDIS_OK) {
    throw ConnectionError("redis at " + endpoint + ": cannot set the command timeout");
  }
  return context;
}

// A blocking context to `address`, connected within options.connect_timeout, with options.command_timeout
// set on it. Throws ConnectionError (TimeoutError) naming the endpoint.
inline ContextPtr dial(const Address& address, const ConnectionOptions& options) {
  errno = 0;
  const bool unix_socket = !address.unix_path.empty();
  const timeval connect_timeout = toTimeval(options.connect_timeout);
  ContextPtr context;
  if (options.connect_timeout.count() == 0) {
    context.reset(unix_socket ? redisConnectUnix(address.unix_path.c_str())
                              : redisConnect(address.host.c_str(), address.port));
  } else {
    context.reset(unix_socket ? redisConnectUnixWithTimeout(address.unix_path.c_str(), connect_timeout)
                              : redisConnectWithTimeout(address.host.c_str(), address.port, connect_timeout));
  }
  return ready(std::move(context), address.endpoint(), options);
}

// An async context to `address`, connecting in the background; the caller owns it (redisAsyncFree) and
// learns of a failed connect from context->err or its connect callback.
inline redisAsyncContext* dialAsync(const Address& address, const ConnectionOptions&) {
  redisAsyncContext* context = address.unix_path.empty() ? redisAsyncConnect(address.host.c_str(), address.port)
                                                         : redisAsyncConnectUnix(address.unix_path.c_str());
  if (context == nullptr)
    throw ConnectionError("redis at " + address.endpoint() + " failed connecting (out of memory)");
  if (context->c.reader != nullptr) limitAggregates(*context->c.reader);
  return context;
}

}  // namespace swl::detail
