#pragma once
// Connection: one hiredis context to one Redis, owned, reconnected on demand.
//
// A Connection connects lazily (the first command), so a service can start while Redis is down and
// let its limiters' failure policy answer. After any I/O error or timeout hiredis leaves the context
// unusable, so the Connection drops it and reports the error; the next command opens a new one
// (after `reconnect_interval`, so a dead Redis is not dialled on every request).
//
// Not thread-safe: use one Connection per thread, or a ConnectionPool for many threads. Limiters keep
// a reference, so the Connection must outlive them; one Connection may serve any number of limiters.

#include <swl/connection_options.hpp>
#include <swl/detail/hiredis.hpp>
#include <swl/detail/reconnect_throttle.hpp>
#include <swl/error.hpp>
#include <swl/redis_client.hpp>
#include <swl/script.hpp>

#include <sys/socket.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

class Connection : public RedisClient {
 public:
  using ContextFactory = std::function<redisContext*()>;

  static Connection tcp(std::string host, int port, ConnectionOptions options = {}) {
    std::string endpoint = detail::tcpEndpoint("swl::Connection::tcp", host, port);
    const timeval timeout = detail::toTimeval(options.connect_timeout);
    return Connection(
        [host = std::move(host), port, timeout] { return redisConnectWithTimeout(host.c_str(), port, timeout); },
        std::move(endpoint), std::move(options));
  }

  static Connection unixSocket(std::string path, ConnectionOptions options = {}) {
    std::string endpoint = detail::unixEndpoint("swl::Connection::unixSocket", path);
    const timeval timeout = detail::toTimeval(options.connect_timeout);
    return Connection([path = std::move(path), timeout] { return redisConnectUnixWithTimeout(path.c_str(), timeout); },
                      std::move(endpoint), std::move(options));
  }

  // Contexts made by the caller (a hiredis 1.x TLS context, say): `connect` is called for every
  // (re)connect and returns a connected context that swl then owns. AUTH and SELECT from `options`
  // are applied to it; the command timeout too, the connect timeout is the factory's business.
  static Connection adopt(ContextFactory connect, std::string description, ConnectionOptions options = {}) {
    if (!connect) throw InvalidArgument("swl::Connection::adopt: the context factory is empty");
    return Connection(std::move(connect), std::move(description), std::move(options));
  }

  // A single context the caller made; swl owns it from here. Once it breaks it cannot be remade, so
  // later commands throw ConnectionError: pass a factory instead to get reconnects.
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

  Connection(Connection&&) noexcept = default;
  Connection& operator=(Connection&&) noexcept = default;

  // Sends one command and returns its reply, error replies included (they are answers, not failures).
  // Arguments are binary-safe. Throws ConnectionError (TimeoutError, AuthError) when there is no answer.
  detail::ReplyPtr command(const std::string_view* argv, std::size_t argc) {
    redisContext& context = connected();
    redisReply* reply = send(context, argv, argc);
    if (reply == nullptr) {
      // hiredis cannot use a context again once it reported an error: drop it so the next command reconnects.
      const detail::ContextPtr broken = std::move(context_);
      throwContextError(*broken, "waiting for a reply");
    }
    return detail::ReplyPtr(reply);
  }

  detail::ReplyPtr command(std::initializer_list<std::string_view> argv) { return command(argv.begin(), argv.size()); }

  // Sends `count` commands in one write, then reads their replies in order, handing each to
  // `on_reply(index, ReplyPtr)`. `argv_of(index)` gives a command as {const std::string_view*, argc}.
  // If the connection fails midway, the replies that arrived have been handed over and the error is
  // thrown for the rest (they may or may not have run).
  template <class ArgvOf, class OnReply>
  void pipeline(std::size_t count, ArgvOf&& argv_of, OnReply&& on_reply) {
    queue(count, argv_of);
    receive(count, on_reply);
  }

  using RedisClient::run;
  detail::ReplyPtr run(const ScriptCall& call) override {
    detail::ReplyPtr reply = evaluate(call);
    if (reply->type == REDIS_REPLY_ERROR) throw detail::scriptError(endpoint_, call.script(), *reply);
    return reply;
  }

  std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) override {
    std::vector<ScriptReply> results = evaluateMany(calls);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      ScriptReply& result = results[i];
      if (result.reply && result.reply->type == REDIS_REPLY_ERROR) {
        result.error = std::make_exception_ptr(detail::scriptError(endpoint_, calls[i].script(), *result.reply));
        result.reply.reset();
      }
    }
    return results;
  }

  // run() without judging the answer: the reply comes back as the server gave it, error replies
  // included, for a client that reads them (a cluster follows MOVED and ASK). NOSCRIPT is still
  // handled here. `asking` sends ASKING in the same write, as the target of an ASK redirection wants.
  detail::ReplyPtr evaluate(const ScriptCall& call, bool asking = false) {
    detail::ReplyPtr reply = send(call, asking);
    if (detail::isErrorReply(*reply, "NOSCRIPT")) {
      load(call.script());
      reply = send(call, asking);
    }
    return reply;
  }

  // runMany() without judging the answers (see evaluate): error replies stay replies; only a failed
  // connection sets ScriptReply::error.
  std::vector<ScriptReply> evaluateMany(const std::vector<ScriptCall>& calls) {
    try {
      sendMany(calls);
    } catch (const Error&) {
      std::vector<ScriptReply> results(calls.size());
      for (ScriptReply& result : results) result.error = std::current_exception();
      return results;
    }
    return collectMany(calls);
  }

  // evaluateMany() in two halves, so that a client of several servers (a cluster) can have them all
  // work at once: sendMany() writes the calls out, collectMany() reads their answers. Nothing else
  // may use the connection in between. sendMany() throws ConnectionError when the calls could not
  // all be written; none is waiting for an answer then.
  void sendMany(const std::vector<ScriptCall>& calls) {
    queue(calls.size(), [&](std::size_t i) { return std::pair(calls[i].argv(), calls[i].argc()); });
    flush();
  }

  std::vector<ScriptReply> collectMany(const std::vector<ScriptCall>& calls) {
    std::vector<ScriptReply> results(calls.size());
    try {
      receive(calls.size(), [&](std::size_t i, detail::ReplyPtr reply) { results[i].reply = std::move(reply); });
    } catch (const Error&) {
      for (ScriptReply& result : results) {
        if (!result.reply) result.error = std::current_exception();
      }
    }

    // The calls that met an empty script cache run once more, after one SCRIPT LOAD per script.
    std::vector<std::size_t> again;
    std::vector<const Script*> loaded;
    for (std::size_t index = 0; index < calls.size(); ++index) {
      ScriptReply& result = results[index];
      if (!result.reply || !detail::isErrorReply(*result.reply, "NOSCRIPT")) continue;
      result.reply.reset();
      const Script& script = calls[index].script();
      try {
        if (std::find(loaded.begin(), loaded.end(), &script) == loaded.end()) load(script), loaded.push_back(&script);
        again.push_back(index);
      } catch (const Error&) {
        result.error = std::current_exception();
      }
    }
    if (again.empty()) return results;
    try {
      pipeline(
          again.size(), [&](std::size_t i) { return std::pair(calls[again[i]].argv(), calls[again[i]].argc()); },
          [&](std::size_t i, detail::ReplyPtr reply) { results[again[i]].reply = std::move(reply); });
    } catch (const Error&) {
      for (std::size_t index : again) {
        if (!results[index].reply) results[index].error = std::current_exception();
      }
    }
    return results;
  }

  // Makes the server know `script` (SCRIPT LOAD); run() does it by itself when a server answers NOSCRIPT.
  void load(const Script& script) {
    detail::ReplyPtr reply = command({"SCRIPT", "LOAD", script.text()});
    if (reply->type == REDIS_REPLY_ERROR) {
      throw ReplyError("redis at " + endpoint_ + ": SCRIPT LOAD of " + script.name() +
                       " failed: " + std::string(detail::replyText(*reply)));
    }
    if (reply->type != REDIS_REPLY_STRING || detail::replyText(*reply) != script.sha()) {
      throw ProtocolError("redis at " + endpoint_ + ": SCRIPT LOAD of " + script.name() +
                          " did not return the expected SHA-1 " + std::string(script.sha()));
    }
  }

  // Round trip to check that Redis answers (connecting first if needed).
  void ping() {
    detail::ReplyPtr reply = command({"PING"});
    if (reply->type == REDIS_REPLY_ERROR) {
      throw ReplyError("redis at " + endpoint_ + " refused PING: " + std::string(detail::replyText(*reply)));
    }
  }

  bool isConnected() const noexcept { return context_ != nullptr; }

  // For a client that learns the server behind an open connection is the wrong one (a master demoted to
  // a replica): the next command connects again, through the factory, which may lead elsewhere.
  void disconnect() noexcept { context_.reset(); }

  // "host:port", "unix:/path" or the adopter's description; used in every error message.
  const std::string& endpoint() const noexcept { return endpoint_; }

 private:
  Connection(ContextFactory connect, std::string endpoint, ConnectionOptions options)
      : connect_(std::move(connect)),
        endpoint_(std::move(endpoint)),
        options_(std::move(options)),
        reconnects_(options_.reconnect_interval) {
    detail::checkOptions(options_);
  }

  redisContext& connected() {
    if (context_ && !closedByServer(*context_)) return *context_;
    context_.reset();
    reconnects_.check(endpoint_);
    try {
      context_ = handshake(open());
      return *context_;
    } catch (const Error& error) {
      reconnects_.failed(error.what());
      throw;
    }
  }

  detail::ContextPtr open() {
    errno = 0;
    detail::ContextPtr context(connect_());
    if (!context) throw ConnectionError("redis at " + endpoint_ + " failed connecting (out of memory)");
    if (context->err != 0) throwContextError(*context, "connecting");
    if (options_.command_timeout.count() > 0 &&
        redisSetTimeout(context.get(), detail::toTimeval(options_.command_timeout)) != REDIS_OK) {
      throw ConnectionError("redis at " + endpoint_ + ": cannot set the command timeout");
    }
    return context;
  }

  detail::ContextPtr handshake(detail::ContextPtr context) {
    auto run = [&](std::initializer_list<std::string_view> argv) {
      redisReply* reply = send(*context, argv.begin(), argv.size());
      if (reply == nullptr) throwContextError(*context, "during the handshake");
      return detail::ReplyPtr(reply);
    };
    if (!options_.password.empty()) {
      detail::ReplyPtr reply =
          options_.user.empty() ? run({"AUTH", options_.password}) : run({"AUTH", options_.user, options_.password});
      if (reply->type == REDIS_REPLY_ERROR) {
        // Redis's own message names the problem and never repeats the password; neither does ours.
        throw AuthError("redis at " + endpoint_ + " refused authentication" +
                        (options_.user.empty() ? std::string() : " as user '" + options_.user + "'") + ": " +
                        std::string(detail::replyText(*reply)));
      }
    }
    if (options_.db != 0) {
      const std::string db = std::to_string(options_.db);
      detail::ReplyPtr reply = run({"SELECT", db});
      if (reply->type == REDIS_REPLY_ERROR) {
        throw ReplyError("redis at " + endpoint_ + " refused SELECT " + db + ": " +
                         std::string(detail::replyText(*reply)));
      }
    }
    return context;
  }

  // A server that restarted, or closed an idle client, has already sent EOF: a peek sees it, so the
  // command goes out on a fresh connection instead of failing on a dead one. It costs one syscall.
  static bool closedByServer(const redisContext& context) noexcept {
    char byte;
    const ssize_t peeked = ::recv(context.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

  detail::ReplyPtr send(const ScriptCall& call, bool asking) {
    if (!asking) return command(call.argv(), call.argc());
    static constexpr std::string_view kAsking[] = {"ASKING"};
    detail::ReplyPtr reply;
    pipeline(
        2,
        [&](std::size_t i) {
          return i == 0 ? std::pair(kAsking, std::size_t{1}) : std::pair(call.argv(), call.argc());
        },
        [&](std::size_t i, detail::ReplyPtr answer) {
          if (i == 1) reply = std::move(answer);
        });
    return reply;
  }

  // One command on `context`, arguments binary-safe; null when hiredis reports an error on the context.
  static redisReply* send(redisContext& context, const std::string_view* argv, std::size_t argc) {
    detail::HiredisArgv hiredis_argv;
    hiredis_argv.assign(argv, argc);
    return static_cast<redisReply*>(
        redisCommandArgv(&context, static_cast<int>(argc), hiredis_argv.pointers(), hiredis_argv.lengths()));
  }

  template <class ArgvOf>
  void queue(std::size_t count, ArgvOf&& argv_of) {
    redisContext& context = connected();
    detail::HiredisArgv hiredis_argv;
    for (std::size_t i = 0; i < count; ++i) {
      const auto [argv, argc] = argv_of(i);
      hiredis_argv.assign(argv, argc);
      if (redisAppendCommandArgv(&context, static_cast<int>(argc), hiredis_argv.pointers(), hiredis_argv.lengths()) !=
          REDIS_OK) {
        // Nothing was written yet; dropping the context drops the half-built batch with it.
        const detail::ContextPtr broken = std::move(context_);
        throwContextError(*broken, "queueing a pipelined command");
      }
    }
  }

  // Writes what queue() gathered without waiting for answers.
  void flush() {
    int done = 0;
    while (done == 0) {
      if (redisBufferWrite(context_.get(), &done) != REDIS_OK) {
        const detail::ContextPtr broken = std::move(context_);
        throwContextError(*broken, "sending pipelined commands");
      }
    }
  }

  template <class OnReply>
  void receive(std::size_t count, OnReply&& on_reply) {
    for (std::size_t i = 0; i < count; ++i) {
      void* reply = nullptr;
      if (!context_ || redisGetReply(context_.get(), &reply) != REDIS_OK || reply == nullptr) {
        const detail::ContextPtr broken = std::move(context_);
        if (!broken) throw ConnectionError("redis at " + endpoint_ + ": no connection to read pipelined replies from");
        throwContextError(*broken, "waiting for pipelined replies");
      }
      try {
        on_reply(i, detail::ReplyPtr(static_cast<redisReply*>(reply)));
      } catch (...) {
        context_.reset();  // the replies still unread would otherwise answer the next commands
        throw;
      }
    }
  }

  // The error hiredis recorded on `context`, as a TimeoutError when it was one.
  [[noreturn]] void throwContextError(const redisContext& context, std::string_view doing) const {
    const bool timed_out = isTimeout(context);
    std::string message = "redis at " + endpoint_ + (timed_out ? " timed out " : " failed ") + std::string(doing) +
                          " (" + context.errstr + ")";
    if (timed_out) throw TimeoutError(message);
    throw ConnectionError(message);
  }

  static bool isTimeout(const redisContext& context) noexcept {
#if defined(REDIS_ERR_TIMEOUT)
    if (context.err == REDIS_ERR_TIMEOUT) return true;
#endif
    // hiredis 0.14 reports a timeout as an I/O error carrying the socket's errno.
    return context.err == REDIS_ERR_IO &&
           (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT || errno == EINPROGRESS);
  }

  ContextFactory connect_;
  std::string endpoint_;
  ConnectionOptions options_;
  detail::ContextPtr context_;
  detail::ReconnectThrottle reconnects_;
};

}  // namespace swl
