#pragma once
// One Asio operation of the limiter, from its start to its one completion: the caller's handler (any
// completion token's, type-erased, move-only), work kept on the handler's executor while it waits, the
// calls it has in flight on the session, and its cancellation.

#include <swl/asio/backend.hpp>
#include <swl/detail/asio/session.hpp>
#include <swl/error.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <tuple>
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
  // Starts an operation for `handler` on `session`: its cancellation slot, if it has one, is ours now.
  template <class Handler>
  static std::shared_ptr<AsioOperation> start(Handler handler, std::shared_ptr<AsioSession> session) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    auto operation = std::make_shared<AsioOperation>(std::move(handler), std::move(session));
    if (slot.is_connected()) {
      operation->slot_ = slot;
      slot.assign([weak = std::weak_ptr<AsioOperation>(operation)](asio::cancellation_type) {
        if (const auto cancelled = weak.lock()) cancelled->cancel();
      });
    }
    return operation;
  }

  template <class Handler>
  AsioOperation(Handler handler, std::shared_ptr<AsioSession> session)
      : handler_(std::make_unique<Held<Handler>>(std::move(handler), session->strand())),
        session_(std::move(session)) {}

  AsioSession& session() const noexcept { return *session_; }
  // Whether the caller cancelled it (from any thread).
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
  // A call of this operation's went out as `ticket`: a cancellation ends it early.
  void sent(std::uint64_t ticket) { tickets_.push_back(ticket); }

  // Completes: on the handler's executor, at once when the caller is already there (the reply path);
  // `later`: never inside the caller's own function (an answer found before anything was sent).
  void complete(asio_error_code error, Result result, bool later = false) {
    if (!handler_) return;
    if (slot_.is_connected()) slot_.clear();
    std::exchange(handler_, nullptr)->complete(error, std::move(result), later);
  }

 private:
  struct Handling {
    virtual ~Handling() = default;
    virtual void complete(asio_error_code error, Result result, bool later) = 0;
  };
  template <class Handler>
  struct Held final : Handling {
    Held(Handler handler, const AsioSession::Strand& strand)
        : handler(std::move(handler)),
          executor(asio::get_associated_executor(this->handler, strand)),
          work(trackedWork(executor)) {}
    void complete(asio_error_code error, Result result, bool later) override {
      auto invoke = [handler = std::move(handler), error, result = std::move(result)]() mutable {
        std::move(handler)(error, std::move(result));
      };
      if (later) {
        asio::post(executor, std::move(invoke));
      } else {
        asio::dispatch(executor, std::move(invoke));
      }
    }
    Handler handler;
    using Executor = asio::associated_executor_t<Handler, AsioSession::Strand>;
    Executor executor;
    decltype(trackedWork(std::declval<const Executor&>())) work;  // until the handler has run
  };

  // On the emitting thread: marks it, then ends its calls on the strand, where they live.
  void cancel() {
    cancelled_.store(true, std::memory_order_release);
    asio::post(session_->strand(), [self = this->shared_from_this()] {
      const auto why = std::make_exception_ptr(cancelledError(self->session_->endpoint()));
      for (const std::uint64_t ticket : self->tickets_) self->session_->answerEarly(ticket, why);
    });
  }

  std::unique_ptr<Handling> handler_;
  std::shared_ptr<AsioSession> session_;
  asio::cancellation_slot slot_;
  std::atomic<bool> cancelled_{false};
  std::vector<std::uint64_t> tickets_;  // on the strand
};

}  // namespace swl::detail
