#pragma once
// What stands behind an AsioConnection: one hiredis async context at a time on the connection's strand,
// the calls in flight on it (detail/io/async_calls.hpp, as on libevent), and their deadlines. Everything
// here runs on the strand.
//
// A call ends once: with its reply, with the failure that kept the reply from coming (the connection
// broke, the circuit is open), or early, at its deadline or when its caller cancels it. A call answered
// early stays in flight until hiredis hands back its reply, which is then dropped: the connection is not
// torn down for one late reply, unlike hiredis's own timeout, which fails every call on the context.
//
// A session ends when its connection is closed, or when the execution context it runs on shuts down
// (asio/detail/context_sessions.hpp): then its calls end without their handlers, as Asio ends the rest of
// the context's work.

#include <swl/asio/backend.hpp>
#include <swl/asio/detail/context_sessions.hpp>
#include <swl/asio/detail/watch.hpp>
#include <swl/connection_options.hpp>
#include <swl/detail/io/async_calls.hpp>
#include <swl/detail/io/async_protocol.hpp>
#include <swl/detail/io/circuit_breaker.hpp>
#include <swl/detail/messages.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <hiredis/async.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace swl::detail {

// What an Asio call carries besides what every event-loop call does: its deadline, and the caller's name
// for it.
struct AsioCallTerms {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool drops_connection_at_deadline = false;  // the handshake's: no answer to it means no connection
  std::uint64_t ticket = 0;                   // the caller's name for it (0 for the connection's own commands)
};

class AsioSession : public AsyncCalls<AsioSession, AsioCallTerms>, public std::enable_shared_from_this<AsioSession> {
 public:
  using Strand = asio::strand<asio::any_io_executor>;
  using Clock = std::chrono::steady_clock;

  // A session on `executor`, ended by its context's shutdown at the latest. `breaker`: shared by the
  // connections of a pool to one server; a breaker of its own when null.
  static std::shared_ptr<AsioSession> make(const asio::any_io_executor& executor, const Address& address,
                                           const ConnectionOptions& options,
                                           std::shared_ptr<CircuitBreaker> breaker = nullptr) {
    auto session = std::make_shared<AsioSession>(executor, address, options, std::move(breaker));
    ContextSessions<AsioSession>::enroll(session, executor);
    return session;
  }

  AsioSession(const asio::any_io_executor& executor, const Address& address, const ConnectionOptions& options,
              std::shared_ptr<CircuitBreaker> breaker)
      : AsyncCalls("swl::AsioConnection", address, options, std::move(breaker)),
        strand_(asio::make_strand(executor)),
        deadline_timer_(strand_) {}
  AsioSession(const AsioSession&) = delete;
  AsioSession& operator=(const AsioSession&) = delete;
  ~AsioSession() { shutdown(); }

  const Strand& strand() const noexcept { return strand_; }

  // Sends `call` and returns its ticket, for answerEarly. `done` runs once, on the strand, never inside
  // run(); at `deadline` at the latest.
  std::uint64_t run(FormattedCall&& call, Clock::time_point deadline, Callback&& done) {
    Pending pending = pendingOf(std::move(call));
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

  // For good: the calls in flight end with a ConnectionError, and later ones too. A call that carried its
  // deadline to Redis is answered at that deadline (AsyncCalls::answer holds it): the timer stays for
  // those, and only for those, so that an io_context with nothing else to do is let go.
  void close() {
    if (closed_) return;
    closed_ = true;
    if (context_ != nullptr) drop(context_, std::make_exception_ptr(ConnectionError(closedMessage())));
    stopTimer();
    if (!held_.empty()) watchDeadline(earliestHeld());
  }

  // The context it runs on shuts down (or the session goes): nothing of the context will run again, so
  // nothing is answered. hiredis's context is freed, closing its socket, and each call still in flight is
  // destroyed with its handler, unrun.
  void shutdown() {
    tearing_down_ = true;
    forgetHeld();
    close();
  }

 private:
  friend class AsyncCalls<AsioSession, AsioCallTerms>;

  // The engine's hooks (detail/io/async_calls.hpp).
  void attach(redisAsyncContext& context) { watch_ = AsioWatch::attach(strand_, context); }
  void sent(Pending& pending) {
    if (pending.done) watchDeadline(pending.deadline);
  }
  // Each handshake command is due within connect_timeout + command_timeout: a server that answers none
  // is not connected, and the context is dropped.
  void greeting(Pending& pending) {
    pending.deadline = Clock::now() + options_.connect_timeout + options_.command_timeout;
    pending.drops_connection_at_deadline = true;
  }
  void replied() noexcept {}
  bool answering() const noexcept { return !tearing_down_; }
  // A call is answered at its own deadline, whatever comes before it.
  Clock::time_point giveUpAt(const Pending& pending, Clock::time_point) const { return pending.deadline; }
  // A dropped connection's calls are answered by endOverdue() at their deadlines.
  bool holdUntil(Clock::time_point until) {
    if (tearing_down_) return false;
    watchDeadline(until);
    return true;
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

  // The wait ends without running endOverdue(); the next watchDeadline() arms it afresh.
  void stopTimer() {
    timer_armed_ = false;
    deadline_timer_.cancel();
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
    releaseHeld();
  }

  // A failure found before anything was sent ends its call on a later turn of the strand.
  void endSoon(Callback&& done, std::exception_ptr error) {
    if (!done || tearing_down_) return;
    asio::post(strand_, [done = std::move(done), error = std::move(error)] { done(ReplyView(), error); });
  }

  std::string timedOutMessage() const { return aboutRedis(endpoint_, " did not answer before the call's deadline"); }

  Strand strand_;
  std::shared_ptr<AsioWatch> watch_;
  bool tearing_down_ = false;
  std::uint64_t tickets_ = 0;
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
