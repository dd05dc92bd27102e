#pragma once
// hiredis's event hooks for one async context, on Asio: the context's socket watched through a
// posix::stream_descriptor on the connection's strand. hiredis owns the socket and closes it; the
// descriptor only borrows it and gives it back (release) before hiredis does, and never closes it.

#include <swl/asio/backend.hpp>

#include <hiredis/async.h>

#include <memory>

namespace swl::detail {

class AsioWatch : public std::enable_shared_from_this<AsioWatch> {
 public:
  using Strand = asio::strand<asio::any_io_executor>;

  // Watches `context`, which must have no event hooks yet, until hiredis frees it (its cleanup hook).
  static std::shared_ptr<AsioWatch> attach(const Strand& strand, redisAsyncContext& context) {
    auto watch = std::make_shared<AsioWatch>(strand, context);
    context.ev.data = watch.get();
    context.ev.addRead = [](void* data) { static_cast<AsioWatch*>(data)->want(watch_read); };
    context.ev.delRead = [](void* data) { static_cast<AsioWatch*>(data)->reading_ = false; };
    context.ev.addWrite = [](void* data) { static_cast<AsioWatch*>(data)->want(watch_write); };
    context.ev.delWrite = [](void* data) { static_cast<AsioWatch*>(data)->writing_ = false; };
    context.ev.cleanup = [](void* data) { static_cast<AsioWatch*>(data)->forget(); };
    return watch;
  }

  AsioWatch(const Strand& strand, redisAsyncContext& context) : socket_(strand), context_(&context) {
    socket_.assign(context.c.fd);
  }
  AsioWatch(const AsioWatch&) = delete;
  AsioWatch& operator=(const AsioWatch&) = delete;
  ~AsioWatch() { forget(); }

 private:
  enum Direction { watch_read, watch_write };

  void want(Direction direction) {
    bool& wanted = direction == watch_read ? reading_ : writing_;
    wanted = true;
    if (direction == watch_write && !flushing_ && (context_->c.flags & REDIS_CONNECTED) != 0) {
      flushSoon();
      return;
    }
    if (!(direction == watch_read ? read_waiting_ : write_waiting_)) wait(direction);
  }

  // A connected socket is nearly always writable. Asking the reactor first costs a system call to re-arm
  // the descriptor and a turn of the loop per write; instead, write once the strand has run what it had
  // queued (so the commands it sends go out together), and wait for writability only when the socket's
  // buffer is full.
  void flushSoon() {
    if (flush_posted_ || write_waiting_) return;
    flush_posted_ = true;
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      self->flush_posted_ = false;
      if (self->context_ == nullptr || !self->writing_ || self->write_waiting_) return;
      self->flushing_ = true;
      redisAsyncHandleWrite(self->context_);  // may free the context (a broken connection)
      self->flushing_ = false;
      if (self->context_ != nullptr && self->writing_ && !self->write_waiting_) self->wait(watch_write);
    });
  }

  // One readiness wait at a time per direction; hiredis says by its hooks whether another is wanted.
  void wait(Direction direction) {
    (direction == watch_read ? read_waiting_ : write_waiting_) = true;
    const auto kind =
        direction == watch_read ? asio::posix::descriptor_base::wait_read : asio::posix::descriptor_base::wait_write;
    socket_.async_wait(kind, [self = shared_from_this(), direction](const asio_error_code& error) {
      (direction == watch_read ? self->read_waiting_ : self->write_waiting_) = false;
      const bool& wanted = direction == watch_read ? self->reading_ : self->writing_;
      if (error || self->context_ == nullptr || !wanted) return;
      // Either may free the context (a closed connection): forget() then clears context_.
      if (direction == watch_read) {
        redisAsyncHandleRead(self->context_);
      } else {
        redisAsyncHandleWrite(self->context_);
      }
      const bool waiting = direction == watch_read ? self->read_waiting_ : self->write_waiting_;
      if (self->context_ != nullptr && wanted && !waiting) self->wait(direction);
    });
  }

  // hiredis is freeing the context and is about to close its socket: hand the socket back first (the
  // waits end with operation_aborted).
  void forget() noexcept {
    context_ = nullptr;
    reading_ = writing_ = false;
    if (socket_.is_open()) socket_.release();
  }

  asio::posix::stream_descriptor socket_;
  redisAsyncContext* context_;
  bool reading_ = false, writing_ = false;             // what hiredis wants watched
  bool read_waiting_ = false, write_waiting_ = false;  // a wait is outstanding
  bool flush_posted_ = false;                          // flushSoon() will write
  bool flushing_ = false;                              // inside that write: what is left waits for the reactor
};

}  // namespace swl::detail
