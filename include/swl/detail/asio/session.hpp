#pragma once
// What stands behind an AsioConnection: one hiredis async context at a time on the connection's strand,
// the calls in flight on it, and their deadlines. Everything here runs on the strand.
//
// A call ends once: with its reply, with the failure that kept the reply from coming (the connection
// broke, the circuit is open), or early, at its deadline or when its caller cancels it. A call answered
// early stays in flight until hiredis hands back its reply, which is then dropped: the connection is not
// torn down for one late reply, unlike hiredis's own timeout, which fails every call on the context.

#include <swl/asio/backend.hpp>
#include <swl/connection_options.hpp>
#include <swl/detail/asio/watch.hpp>
#include <swl/detail/io/async_protocol.hpp>
#include <swl/detail/io/checked_options.hpp>
#include <swl/detail/io/circuit_breaker.hpp>
#include <swl/detail/io/dial.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/messages.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <hiredis/async.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::detail {

class AsioSession : public std::enable_shared_from_this<AsioSession> {
 public:
  using Strand = asio::strand<asio::any_io_executor>;
  using Clock = std::chrono::steady_clock;
  // How a call ends: a non-error reply (valid during the callback) and no error, or a null view and the
  // error.
  using Callback = std::function<void(ReplyView reply, std::exception_ptr error)>;

  // `breaker`: shared by the connections of a pool to one server; a breaker of its own when null.
  AsioSession(const asio::any_io_executor& executor, const Address& address, const ConnectionOptions& options,
              std::shared_ptr<CircuitBreaker> breaker = nullptr)
      : strand_(asio::make_strand(executor)),
        address_(checkedAddress("swl::AsioConnection", address)),
        endpoint_(address_.endpoint()),
        options_(checkedOptions(options)),
        dialer_(options_),
        breaker_(breaker ? std::move(breaker) : breakerFor(options_)),
        deadline_timer_(strand_) {
    if (options_.replica_acks > 0) {
      throw InvalidArgument(
          "swl::AsioConnection: replica_acks (WAIT) is not supported on the event loop; "
          "use a blocking Connection, ConnectionPool or SentinelConnection for it");
    }
    if (options_.command_timeout.count() == 0) {
      throw InvalidArgument("swl::AsioConnection: command_timeout must be positive; it is every call's deadline");
    }
  }
  AsioSession(const AsioSession&) = delete;
  AsioSession& operator=(const AsioSession&) = delete;
  // Destroyed last by Asio itself (the io_context going away with work of ours queued): nothing may run
  // then, so the calls still in flight end without their callbacks.
  ~AsioSession() {
    tearing_down_ = true;
    close();
  }

  const Strand& strand() const noexcept { return strand_; }
  const std::string& endpoint() const noexcept { return endpoint_; }
  const ConnectionOptions& options() const noexcept { return options_; }

  // Sends `call` and returns its ticket, for answerEarly. `done` runs once, on the strand, never inside
  // run(); at `deadline` at the latest.
  std::uint64_t run(FormattedCall&& call, Clock::time_point deadline, Callback&& done) {
    Pending pending;
    pending.command = std::move(call.command);
    pending.script = call.script;
    pending.done = std::move(done);
    pending.deadline = deadline;
    pending.ticket = ++tickets_;
    send(std::move(pending));
    return tickets_;
  }

  // Ends the call `ticket` now with `error`, unless it has ended: its reply, if one comes, is dropped (or,
  // if none comes abandonAfter() past its deadline, the connection is).
  void answerEarly(std::uint64_t ticket, const std::exception_ptr& error) {
    for (Pending& pending : in_flight_) {
      if (pending.ticket == ticket && pending.done) {
        watchDeadline(std::min(pending.deadline, Clock::now()) + abandonAfter());
        return std::exchange(pending.done, nullptr)(ReplyView(), error);
      }
    }
  }

  // For good: the calls in flight end with a ConnectionError, and later ones too.
  void close() {
    if (closed_) return;
    closed_ = true;
    deadline_timer_.cancel();
    if (context_ != nullptr) drop(context_, std::make_exception_ptr(ConnectionError(closedMessage())));
  }

 private:
  struct Pending {
    std::string command;             // the whole RESP command, kept to resend after NOSCRIPT
    const Script* script = nullptr;  // null for the connection's own commands (AUTH, SELECT, SCRIPT LOAD)
    Callback done;                   // empty once the call has ended
    Clock::time_point deadline = Clock::time_point::max();
    bool drops_connection_at_deadline = false;  // the handshake's: no answer to it means no connection
    bool repeated = false;
    std::uint64_t ticket = 0;  // the caller's name for it (0 for the connection's own commands)
    std::uint64_t order = 0;   // send order, to know whether a SCRIPT LOAD went out after it
    redisAsyncContext* context = nullptr;
    std::exception_ptr failure;  // set when the session drops the context: why this call got no reply
    AsioSession* owner = nullptr;
    std::list<Pending>::iterator position;
  };

  void send(Pending&& pending) {
    redisAsyncContext* context = nullptr;
    try {
      context = connected();
    } catch (const Error&) {
      return endSoon(std::move(pending.done), std::current_exception());
    }
    auto position = in_flight_.insert(in_flight_.end(), std::move(pending));
    position->position = position;
    position->owner = this;
    position->context = context;
    position->order = ++sent_;
    if (redisAsyncFormattedCommand(context, &AsioSession::onReply, &*position, position->command.data(),
                                   position->command.size()) != REDIS_OK) {
      // The context is already shutting down; its teardown will not call back for this one.
      Callback done = std::move(position->done);
      in_flight_.erase(position);
      return endSoon(std::move(done), std::make_exception_ptr(ConnectionError(lostMessage(context))));
    }
    if (position->done) watchDeadline(position->deadline);
  }

  // The live context, connecting first when there is none. Commands sent before the connection is up
  // wait in hiredis's buffer, behind AUTH and SELECT.
  redisAsyncContext* connected() {
    if (closed_) throw ConnectionError(closedMessage());
    breaker_->admit(endpoint_);
    if (context_ != nullptr) return context_;
    redisAsyncContext* context = dialer_.dialAsync(address_);
    if (context->err != 0) {
      const std::string why = aboutRedis(endpoint_, " failed connecting (", context->errstr, ")");
      redisAsyncFree(context);
      breaker_->recordFailure(why);
      throw ConnectionError(why);
    }
    context->data = this;
    watch_ = AsioWatch::attach(strand_, *context);
    redisAsyncSetConnectCallback(context, &AsioSession::onConnect);
    redisAsyncSetDisconnectCallback(context, &AsioSession::onDisconnect);
    context_ = context;
    handshake();
    return context_;
  }

  // The handshake (detail/io/async_protocol.hpp), each command due within connect_timeout +
  // command_timeout: a server that answers none is not connected, and the context is dropped. A refusal
  // drops it with an AuthError.
  void handshake() {
    const Clock::time_point due = Clock::now() + options_.connect_timeout + options_.command_timeout;
    for (Greeting& greeting : handshakeOf(options_)) {
      Pending pending;
      pending.command = std::move(greeting.command);
      pending.deadline = due;
      pending.drops_connection_at_deadline = true;
      pending.done = [this, what = std::move(greeting.what)](ReplyView, std::exception_ptr error) {
        if (error && context_ != nullptr) refused(what, error);
      };
      send(std::move(pending));
    }
  }

  void refused(const std::string& what, const std::exception_ptr& error) {
    try {
      std::rethrow_exception(error);
    } catch (const ReplyError& refusal) {
      const std::string why = handshakeRefusal(endpoint_, what, refusal);
      breaker_->recordFailure(why, BreakCause::refused_credentials);
      drop(context_, std::make_exception_ptr(AuthError(why)));
    } catch (const Error&) {
      // the connection failed on its own: its calls have their reasons already
    }
  }

  // Frees `context`: hiredis calls back every call still in flight on it, and they fail with `why`.
  void drop(redisAsyncContext* context, const std::exception_ptr& why) {
    if (context == context_) context_ = nullptr;
    for (Pending& pending : in_flight_) {
      if (pending.context == context && !pending.failure) pending.failure = why;
    }
    redisAsyncFree(context);  // inside a hiredis callback this only marks it; hiredis frees it after
  }

  static void onReply(redisAsyncContext* context, void* reply, void* privdata) noexcept {
    auto& pending = *static_cast<Pending*>(privdata);
    AsioSession& self = *pending.owner;
    Pending taken = std::move(pending);
    self.in_flight_.erase(taken.position);
    self.answer(context, ReplyView(static_cast<const redisReply*>(reply)), std::move(taken));
  }

  void answer(redisAsyncContext* context, ReplyView reply, Pending pending) {
    if (tearing_down_) return;
    if (reply.isNull()) {
      // The context is going away: the next call connects afresh.
      if (context == context_) context_ = nullptr;
      if (pending.done) {
        pending.done(ReplyView(), pending.failure ? pending.failure
                                                  : std::make_exception_ptr(ConnectionError(lostMessage(context))));
      }
      return;
    }
    breaker_->recordSuccess();
    if (!pending.done) return;  // answered at its deadline, or cancelled: the late reply is dropped
    if (pending.script != nullptr && !pending.repeated && reply.isError("NOSCRIPT"))
      return repeatAfterLoad(std::move(pending));
    if (reply.isError()) {
      const std::string what = pending.script != nullptr ? "script " + pending.script->name() : "a command";
      return pending.done(ReplyView(), std::make_exception_ptr(
                                           redisError<ReplyError>(endpoint_, ": ", what, " failed: ", reply.text())));
    }
    pending.done(reply, nullptr);
  }

  // NOSCRIPT: loaded once for every call that met the same empty cache, then sent again (ScriptLoads).
  void repeatAfterLoad(Pending pending) {
    if (loads_.needLoadFor(*pending.script, pending.order)) {
      const std::string_view load[] = {"SCRIPT", "LOAD", pending.script->text()};
      Pending loading;
      loading.command = formattedCommand(load, 3);
      loading.done = [](ReplyView, std::exception_ptr) {};  // a failed load shows as NOSCRIPT again
      send(std::move(loading));
      loads_.loaded(*pending.script, sent_);
    }
    pending.repeated = true;
    send(std::move(pending));
  }

  static void onConnect(const redisAsyncContext* context, int status) {
    auto& self = *static_cast<AsioSession*>(context->data);
    if (context != self.context_ || status == REDIS_OK) return;
    // hiredis frees the context itself after this, calling back everything queued on it.
    const std::string why = aboutRedis(self.endpoint_, " failed connecting (", context->errstr, ")");
    self.breaker_->recordFailure(why);
    for (Pending& pending : self.in_flight_) {
      if (pending.context == context && !pending.failure)
        pending.failure = std::make_exception_ptr(ConnectionError(why));
    }
    self.context_ = nullptr;
  }

  static void onDisconnect(const redisAsyncContext* context, int) {
    auto& self = *static_cast<AsioSession*>(context->data);
    if (context == self.context_) self.context_ = nullptr;
  }

  // Deadlines: one timer, due at the earliest deadline of a call still waiting.
  void watchDeadline(Clock::time_point deadline) {
    if (timer_armed_ && deadline >= timer_due_) return;
    timer_armed_ = true;
    timer_due_ = deadline;
    deadline_timer_.expires_at(deadline);  // cancels the wait for a later deadline
    deadline_timer_.async_wait([self = weak_from_this(), deadline](const asio_error_code& error) {
      const auto session = self.lock();
      if (error || !session || session->timer_due_ != deadline) return;
      session->timer_armed_ = false;
      session->endOverdue();
    });
  }

  // How long past a call's deadline its reply may still come. A server that lets that pass without
  // answering is taken for gone (stopped for good, or behind a network that drops everything): the replies
  // that call and those behind it await would never come, and their records would pile up.
  Clock::duration abandonAfter() const noexcept { return options_.connect_timeout + 4 * options_.command_timeout; }

  // The calls past their deadline end, after the walk: ending one may start or end others. A connection
  // that left a call unanswered abandonAfter() past its deadline is dropped, as a broken one is.
  void endOverdue() {
    const Clock::time_point now = Clock::now();
    Clock::time_point next = Clock::time_point::max();
    redisAsyncContext* unanswered_handshake = nullptr;
    bool gone = false;
    std::vector<Callback> overdue;
    for (Pending& pending : in_flight_) {
      if (!pending.done) {  // ended early; its reply is still awaited
        if (pending.context != context_ || pending.failure) continue;
        const Clock::time_point given_up_at = pending.deadline + abandonAfter();
        gone = gone || given_up_at <= now;
        next = std::min(next, given_up_at);
        continue;
      }
      if (pending.deadline > now) {
        next = std::min(next, pending.deadline);
      } else if (pending.drops_connection_at_deadline) {
        unanswered_handshake = pending.context;
      } else {
        overdue.push_back(std::exchange(pending.done, nullptr));
        next = std::min(next, pending.deadline + abandonAfter());  // when its reply is given up
      }
    }
    if (next != Clock::time_point::max()) watchDeadline(next);
    if (unanswered_handshake != nullptr && unanswered_handshake == context_) {
      const std::string why =
          aboutRedis(endpoint_, " did not answer the handshake within ",
                     std::to_string((options_.connect_timeout + options_.command_timeout).count()), " ms");
      breaker_->recordFailure(why);
      drop(context_, std::make_exception_ptr(TimeoutError(why)));
    } else if (gone && context_ != nullptr) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(abandonAfter());
      const std::string why = aboutRedis(endpoint_, " answered nothing for ", std::to_string(waited.count()),
                                         " ms past a call's deadline: the connection is dropped");
      breaker_->recordFailure(why);
      drop(context_, std::make_exception_ptr(TimeoutError(why)));
    }
    const auto timed_out = std::make_exception_ptr(TimeoutError(timedOutMessage()));
    for (Callback& done : overdue) done(ReplyView(), timed_out);
  }

  // A failure found before anything was sent ends its call on a later turn of the strand.
  void endSoon(Callback done, std::exception_ptr error) {
    if (!done || tearing_down_) return;
    asio::post(strand_, [done = std::move(done), error = std::move(error)] { done(ReplyView(), error); });
  }

  std::string lostMessage(const redisAsyncContext* context) const {
    return aboutRedis(endpoint_, ": connection lost",
                      (context->errstr[0] != '\0' ? " (" + std::string(context->errstr) + ")" : std::string()));
  }
  std::string timedOutMessage() const { return aboutRedis(endpoint_, " did not answer before the call's deadline"); }
  std::string closedMessage() const { return "swl::AsioConnection to " + endpoint_ + " is closed"; }

  Strand strand_;
  Address address_;
  std::string endpoint_;
  ConnectionOptions options_;
  Dialer dialer_;
  std::shared_ptr<CircuitBreaker> breaker_;
  redisAsyncContext* context_ = nullptr;  // freed by drop(), or by hiredis itself when the connection ends
  std::shared_ptr<AsioWatch> watch_;
  bool closed_ = false;
  bool tearing_down_ = false;
  std::list<Pending> in_flight_;  // send order; hiredis holds a pointer to each until it calls back
  std::uint64_t sent_ = 0;
  std::uint64_t tickets_ = 0;
  ScriptLoads loads_;
  asio::steady_timer deadline_timer_;
  Clock::time_point timer_due_{};
  bool timer_armed_ = false;
};

// Runs `work` on `strand`: at once when this thread is on it already (the usual case: a caller's handler
// completes there), else through asio::dispatch. asio::dispatch would run it at once too, but only after
// asking the polymorphic executor inside the strand for blocking.possibly, which allocates.
template <class Work>
void onStrand(const AsioSession::Strand& strand, Work&& work) {
  if (strand.running_in_this_thread()) {
    std::forward<Work>(work)();
  } else {
    asio::dispatch(strand, std::forward<Work>(work));
  }
}

}  // namespace swl::detail
