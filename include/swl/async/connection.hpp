#pragma once
/// \file
/// AsyncConnection: one hiredis async context on the caller's libevent loop, for event-loop services.
/// Any number of calls may be in flight on it at once; replies come back through callbacks on the loop.
///
///   event_base* loop = event_base_new();
///   auto redis = swl::AsyncConnection::tcp(loop, "127.0.0.1", 6379);
///   swl::AsyncSlidingWindowLimiter<> limiter(redis, swl::Limit{100, std::chrono::seconds(10)});
///   limiter.tryAcquire("user:42", 1, [](swl::Outcome outcome) { ... });
///   event_base_dispatch(loop);
///
/// The same promises as the blocking Connection: EVALSHA only, NOSCRIPT loads the script and repeats
/// that call once, nothing else is ever sent twice. Every callback runs exactly once, on the loop:
/// with the reply, or with the error that kept it from coming (the connection broke, or no reply came
/// within `command_timeout`: the context is then dropped, its in-flight calls fail with TimeoutError,
/// and the next call connects again). A call made while Redis is unreachable fails on the next turn of
/// the loop, never inside the call that made it.
///
/// Not thread-safe: use it from the loop's thread. It must outlive its calls' callbacks, which must not
/// throw (they run inside hiredis's C code; an exception escaping one terminates the program).
/// Needs libevent (Debian libevent-dev) and the CMake target swl::async.

#include <swl/connection_options.hpp>
#include <swl/detail/io/async_calls.hpp>
#include <swl/detail/io/async_protocol.hpp>
#include <swl/detail/io/libevent_watch.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <event2/event.h>
#include <hiredis/async.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace swl {

namespace detail {
// What a call on the libevent loop carries besides what every event-loop call does.
struct LoopCallTerms {
  std::optional<std::chrono::steady_clock::time_point> sent_at;  // unset until the loop was free to write it
};
}  // namespace detail

/// One hiredis async context on the caller's libevent loop (async/connection.hpp says how it
/// reconnects and times calls out); what AsyncLimiter runs on.
class AsyncConnection : private detail::AsyncCalls<AsyncConnection, detail::LoopCallTerms> {
 public:
  /// Called once per call: with a non-error reply (valid only during the callback) and no error, or
  /// with a null view and the error (ConnectionError, TimeoutError, ReplyError).
  using Callback = std::function<void(ReplyView reply, std::exception_ptr error)>;

  /// A connection to host:port, opened on `loop`'s next turns; calls made before then wait for it.
  static AsyncConnection tcp(event_base* loop, std::string host, int port, ConnectionOptions options = {}) {
    return AsyncConnection(loop, Address{std::move(host), port}, std::move(options));
  }

  /// A connection over the Unix socket at `path`, as tcp() makes one.
  static AsyncConnection unixSocket(event_base* loop, std::string path, ConnectionOptions options = {}) {
    return AsyncConnection(loop, Address::unixSocket(std::move(path)), std::move(options));
  }

  /// hiredis and libevent hold pointers to this object: it stays where it was made.
  ///@{
  AsyncConnection(const AsyncConnection&) = delete;
  AsyncConnection& operator=(const AsyncConnection&) = delete;
  ///@}

  /// Every call in flight gets its callback, with a ConnectionError, before the connection is gone.
  ~AsyncConnection() {
    closing_ = true;
    closed_ = true;
    // Freeing the context runs every in-flight callback (with a ConnectionError); then the deferred ones.
    if (context_ != nullptr) drop(context_, std::make_exception_ptr(ConnectionError(closedMessage())));
    releaseAllHeld();
    deliverDeferred();
  }

  /// Closes the connection for good: the calls in flight get a ConnectionError on their callbacks, later
  /// calls fail too (on the loop's next turn), and nothing of this connection keeps the loop running, so
  /// event_base_dispatch can return once the rest of the service has stopped.
  void close() {
    if (closed_) return;
    closed_ = true;
    if (context_ != nullptr) drop(context_, std::make_exception_ptr(ConnectionError(closedMessage())));
    evtimer_del(timeout_timer_.get());
  }

  /// The event loop this connection runs on.
  event_base* loop() const noexcept { return loop_; }

  /// Sends one script call. The call's keys and arguments are copied before run() returns.
  void run(const ScriptCall& call, Callback done) {
    Pending pending = pendingOf(detail::formatted(call));
    pending.done = std::move(done);
    send(std::move(pending));
  }

  /// Whether the context is connected now (false while it connects or reconnects).
  bool isConnected() const noexcept { return context_ != nullptr && connected_; }
  /// The calls in flight (the connection's own AUTH, PING, SELECT and SCRIPT LOAD not counted).
  std::size_t inFlight() const noexcept {
    return static_cast<std::size_t>(std::count_if(in_flight_.begin(), in_flight_.end(),
                                                  [](const Pending& pending) { return pending.script != nullptr; }));
  }
  /// "host:port" or "unix:/path": how messages name the server.
  const std::string& endpoint() const noexcept { return AsyncCalls::endpoint(); }

 private:
  friend class detail::AsyncCalls<AsyncConnection, detail::LoopCallTerms>;
  using Clock = std::chrono::steady_clock;

  struct EventDeleter {
    void operator()(event* handle) const noexcept { event_free(handle); }
  };
  using EventPtr = std::unique_ptr<event, EventDeleter>;

  AsyncConnection(event_base* loop, Address address, ConnectionOptions options)
      : AsyncCalls("swl::AsyncConnection", address, options, nullptr), loop_(loop) {
    if (loop_ == nullptr) throw InvalidArgument("swl::AsyncConnection: the event_base is null");
    timeout_timer_.reset(evtimer_new(loop_, &AsyncConnection::onTimer, this));
    deferred_event_.reset(event_new(loop_, -1, 0, &AsyncConnection::onDeferred, this));
    loop_free_event_.reset(event_new(loop_, -1, 0, &AsyncConnection::onLoopFree, this));
    hold_timer_.reset(evtimer_new(loop_, &AsyncConnection::onHoldEnd, this));
    if (!timeout_timer_ || !deferred_event_ || !loop_free_event_ || !hold_timer_)
      throw Error("swl::AsyncConnection: libevent could not make its events");
  }

  // The engine's hooks (detail/io/async_calls.hpp).
  void attach(redisAsyncContext& context) {
    if (!detail::LibeventWatch::attach(loop_, context)) {
      throw detail::redisError<ConnectionError>(endpoint_, ": cannot attach to the libevent loop");
    }
  }
  void sent(Pending& pending) {
    // Its wait starts when the loop is next free to write it (onLoopFree): a caller may queue a batch
    // for longer than command_timeout in one turn of the loop, before anything of it goes out.
    pending.sent_at.reset();  // a call sent again after NOSCRIPT waits afresh
    event_active(loop_free_event_.get(), 0, 0);
    if (!evtimer_pending(timeout_timer_.get(), nullptr)) armTimer(options_.command_timeout);
  }
  void greeting(Pending&) noexcept {}
  void replied() { last_reply_at_ = Clock::now(); }
  bool answering() const noexcept { return true; }
  // A call's wait starts no earlier than now (see sent()), and the connection gives up on it no earlier
  // than command_timeout after.
  Clock::time_point giveUpAt(const Pending&, Clock::time_point now) const { return now + options_.command_timeout; }
  bool holdUntil(Clock::time_point until) {
    if (closing_) return false;
    const timeval delay = detail::toTimeval(
        std::chrono::ceil<std::chrono::microseconds>(std::max(until - Clock::now(), Clock::duration::zero())));
    evtimer_add(hold_timer_.get(), &delay);
    return true;
  }
  static void onHoldEnd(evutil_socket_t, short, void* self) { static_cast<AsyncConnection*>(self)->releaseHeld(); }

  // The oldest call in flight decides: once it has waited command_timeout for its reply, the context is
  // dropped. Replies come in order, so it waits from when it was sent or from the reply before it,
  // whichever came later: a batch may take longer in all while the server keeps answering. Only time the
  // loop was free to hear the server counts (see the late timer below).
  static void onTimer(evutil_socket_t, short, void* self) { static_cast<AsyncConnection*>(self)->checkTimeouts(); }

  void checkTimeouts() {
    if (in_flight_.empty()) return;
    const auto now = Clock::now();
    // A timer that fires late found this loop busy (its caller queueing a large batch, say): nothing it
    // sent could be written, nor any answer read, meanwhile, so the wait starts again from now.
    if (now - timer_due_ > options_.command_timeout / 4) last_reply_at_ = now;
    const Pending& oldest = in_flight_.front();
    const auto waited = oldest.sent_at ? now - std::max(*oldest.sent_at, last_reply_at_) : Clock::duration{};
    if (waited < options_.command_timeout) {
      armTimer(std::chrono::ceil<std::chrono::microseconds>(options_.command_timeout - waited));
      return;
    }
    // Bytes waiting on the socket are an answer the loop has not read yet (the timer and the answer came
    // due in the same turn, the timer first): the server did answer, so the wait starts again.
    if (answerWaiting(*oldest.context)) {
      last_reply_at_ = now;
      armTimer(options_.command_timeout);
      return;
    }
    const std::string why = detail::aboutRedis(endpoint_, " timed out waiting for a reply (no answer within ",
                                               std::to_string(options_.command_timeout.count()), " ms)");
    breaker_->recordFailure(why);
    drop(oldest.context, std::make_exception_ptr(TimeoutError(why)));
    if (!in_flight_.empty() && !evtimer_pending(timeout_timer_.get(), nullptr)) armTimer(options_.command_timeout);
  }

  static bool answerWaiting(const redisAsyncContext& context) noexcept {
    pollfd socket{context.c.fd, POLLIN, 0};
    return ::poll(&socket, 1, 0) > 0 && (socket.revents & POLLIN) != 0;
  }

  void armTimer(std::chrono::microseconds after) {
    const timeval delay = detail::toTimeval(after);
    timer_due_ = Clock::now() + after;
    evtimer_add(timeout_timer_.get(), &delay);
  }

  // The calls queued since the loop was last free go out now: their waits for a reply start here.
  static void onLoopFree(evutil_socket_t, short, void* self) {
    auto& connection = *static_cast<AsyncConnection*>(self);
    const auto now = Clock::now();
    for (auto pending = connection.in_flight_.rbegin(); pending != connection.in_flight_.rend() && !pending->sent_at;
         ++pending) {
      pending->sent_at = now;
    }
  }

  // Failures found before anything was sent are answered on the loop's next turn.
  void endSoon(Callback&& done, std::exception_ptr error) {
    if (closing_) {
      done(ReplyView(), std::move(error));
      return;
    }
    deferred_.emplace_back(std::move(done), std::move(error));
    event_active(deferred_event_.get(), 0, 0);
  }

  static void onDeferred(evutil_socket_t, short, void* self) { static_cast<AsyncConnection*>(self)->deliverDeferred(); }

  void deliverDeferred() {
    std::deque<std::pair<Callback, std::exception_ptr>> due;
    due.swap(deferred_);
    for (auto& [done, error] : due) done(ReplyView(), std::move(error));
  }

  event_base* loop_;
  bool closing_ = false;  // being destroyed: callbacks run at once, there is no next turn of the loop
  Clock::time_point last_reply_at_{};
  Clock::time_point timer_due_{};
  EventPtr timeout_timer_;
  EventPtr deferred_event_;
  EventPtr loop_free_event_;
  EventPtr hold_timer_;  // answers the failures of calls whose deadlines had not come (AsyncCalls::releaseHeld)
  std::deque<std::pair<Callback, std::exception_ptr>> deferred_;
};

}  // namespace swl
