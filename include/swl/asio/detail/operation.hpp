#pragma once
// One Asio operation of the limiter, from its start to its one completion: the caller's handler (any
// completion token's, type-erased, move-only), work kept on the handler's executor while it waits, the
// calls it has in flight on the session, and its cancellation.
//
// Two executors meet here, and each piece of state belongs to one of them. The calls, the tickets and the
// completion are the connection's strand's. The handler's cancellation slot is its caller's, who may emit
// on it from any executor of its own: a coroutine's strand, or the executor of whichever operation of a
// parallel group (`a || b`) ended first. So the operation touches the slot once, when it starts (inside
// the caller's initiating call), and never again, as Asio's own operations do: the next operation on the
// slot replaces the handler, and until then a late emit finds the operation ended and does nothing. What
// the handler does is thread-safe: it sets an atomic flag and posts to the strand.

#include <swl/asio/backend.hpp>
#include <swl/asio/detail/session.hpp>
#include <swl/error.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace swl::detail {

// Thrown for nothing: what the observer is told when the caller cancelled a call.
inline Error cancelledError(std::string_view endpoint) {
  return Error(aboutRedis(endpoint, ": the caller cancelled the call; if it had been sent, Redis may have counted it"));
}

// `executor`, told that work waits for it (so that its io_context keeps running), when it can be told.
template <class Executor>
auto trackedWork(const Executor& executor) {
  if constexpr (asio::can_prefer<const Executor&, asio::execution::outstanding_work_t::tracked_t>::value) {
    return asio::prefer(executor, asio::execution::outstanding_work.tracked);
  } else {
    return executor;
  }
}

template <class Result>
class AsioOperation : public std::enable_shared_from_this<AsioOperation<Result>> {
 public:
  // Starts an operation for `handler` on `session`, on the caller's thread: the handler's cancellation
  // slot, if it has one, now cancels it.
  template <class Handler>
  static std::shared_ptr<AsioOperation> start(Handler handler, std::shared_ptr<AsioSession> session) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    std::shared_ptr<AsioOperation> operation =
        std::make_shared<Holding<Handler>>(std::move(handler), std::move(session));
    if (slot.is_connected()) {
      slot.assign([weak = std::weak_ptr<AsioOperation>(operation)](asio::cancellation_type) {
        if (const auto cancelled = weak.lock()) cancelled->cancel();
      });
    }
    return operation;
  }

  AsioOperation(const AsioOperation&) = delete;
  AsioOperation& operator=(const AsioOperation&) = delete;
  virtual ~AsioOperation() = default;

  AsioSession& session() const noexcept { return *session_; }
  // Whether the caller cancelled it (from any thread).
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
  // A call of this operation's went out as `ticket`: a cancellation ends it early. On the strand.
  void sent(std::uint64_t ticket) {
    if (first_ticket_ == 0) {
      first_ticket_ = ticket;
    } else {
      more_tickets_.push_back(ticket);
    }
  }

  // Completes: on the handler's executor, at once when the caller is already there (the reply path);
  // `later`: never inside the caller's own function (an answer found before anything was sent). On the
  // strand, or on the caller's thread before anything reached the strand.
  void complete(asio_error_code error, Result result, bool later = false) {
    if (completed_) return;
    completed_ = true;
    deliver(error, std::move(result), later);
  }

 protected:
  explicit AsioOperation(std::shared_ptr<AsioSession> session) : session_(std::move(session)) {}

 private:
  // The operation for one handler type: the handler lives in the operation's own allocation.
  template <class Handler>
  class Holding;

  virtual void deliver(asio_error_code error, Result result, bool later) = 0;

  // On the emitting thread: marks it, then ends its calls on the strand, where they live.
  void cancel() {
    cancelled_.store(true, std::memory_order_release);
    asio::post(session_->strand(), [self = this->shared_from_this()] {
      const auto why = std::make_exception_ptr(cancelledError(self->session_->endpoint()));
      if (self->first_ticket_ != 0) self->session_->answerEarly(self->first_ticket_, why);
      for (const std::uint64_t ticket : self->more_tickets_) self->session_->answerEarly(ticket, why);
    });
  }

  const std::shared_ptr<AsioSession> session_;
  std::atomic<bool> cancelled_{false};
  bool completed_ = false;
  // On the strand. Tickets start at 1; a single call (the usual operation) costs no allocation.
  std::uint64_t first_ticket_ = 0;
  std::vector<std::uint64_t> more_tickets_;
};

template <class Result>
template <class Handler>
class AsioOperation<Result>::Holding final : public AsioOperation<Result> {
 public:
  Holding(Handler handler, std::shared_ptr<AsioSession> session)
      : AsioOperation<Result>(std::move(session)),
        handler_(std::move(handler)),
        executor_(trackedWork(asio::get_associated_executor(handler_, this->session().strand()))) {}

 private:
  using Executor = decltype(trackedWork(std::declval<asio::associated_executor_t<Handler, AsioSession::Strand>>()));

  void deliver(asio_error_code error, Result result, bool later) override {
    auto invoke = [handler = std::move(handler_), error, result = std::move(result)]() mutable {
      std::move(handler)(error, std::move(result));
    };
    // Once the handler has run, or its executor holds it as work of its own, the work we kept ends.
    const Executor executor = std::move(*executor_);
    executor_.reset();
    if (later) {
      asio::post(executor, std::move(invoke));
    } else if constexpr (std::is_same_v<Executor, AsioSession::Strand>) {
      onStrand(executor, std::move(invoke));  // a handler with no executor of its own
    } else {
      asio::dispatch(executor, std::move(invoke));
    }
  }

  Handler handler_;
  std::optional<Executor> executor_;  // the handler's, tracking work until the handler is handed to it
};

}  // namespace swl::detail
