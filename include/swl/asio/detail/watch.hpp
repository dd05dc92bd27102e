#pragma once
// hiredis's event hooks for one async context, on Asio: the context's socket watched through a
// posix::stream_descriptor, whose waits end on the connection's strand. hiredis owns the socket and
// closes it; the descriptor only borrows it and gives it back (release) before hiredis does, and never
// closes it.

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

  AsioWatch(const Strand& strand, redisAsyncContext& context)
      : strand_(strand), socket_(strand.get_inner_executor()), context_(&context) {
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
      if (!reading_replies_) flushSoon();  // else the replies' handler flushes once they are all read
      return;
    }
    if (!(direction == watch_read ? read_waiting_ : write_waiting_)) wait(direction);
  }

  // A connected socket is nearly always writable. Asking the reactor first costs a system call to re-arm
  // the descriptor and a turn of the loop per write; instead, write once the strand has run what it had
  // queued (so the commands it sends go out together), and wait for writability only when the socket's
  // buffer is full. What the replies' callbacks sent goes out when they have all run, in the same turn:
  // posting it would cost the loop another look at the reactor between the replies and the next calls.
  void flushSoon() {
    if (flush_posted_ || write_waiting_) return;
    flush_posted_ = true;
    asio::post(strand_, [self = shared_from_this()] {
      self->flush_posted_ = false;
      self->flush();
    });
  }

  void flush() {
    if (context_ == nullptr || !writing_ || write_waiting_) return;
    flushing_ = true;
    redisAsyncHandleWrite(context_);  // may free the context (a broken connection)
    flushing_ = false;
    if (context_ != nullptr && writing_ && !write_waiting_) wait(watch_write);
  }

  void readReplies() {
    reading_replies_ = true;
    redisAsyncHandleRead(context_);  // may free the context (a closed connection)
    reading_replies_ = false;
    flush();
  }

  // One readiness wait at a time per direction; hiredis says by its hooks whether another is wanted.
  void wait(Direction direction) {
    if (direction == watch_write) {
      watches_writes_ = true;
    } else if (watches_writes_ && !write_waiting_) {
      watchReadsOnly();  // no wait is outstanding, which releasing the descriptor would end
    }
    (direction == watch_read ? read_waiting_ : write_waiting_) = true;
    const auto kind =
        direction == watch_read ? asio::posix::descriptor_base::wait_read : asio::posix::descriptor_base::wait_write;
    // The socket completes its waits outside the strand, and they enter it here: at once when no other
    // thread holds it (the usual case). A wait bound to the strand would be queued behind the reactor
    // instead, and the loop would look at the reactor once more before the replies are read.
    socket_.async_wait(kind, [self = shared_from_this(), direction](const asio_error_code& error) mutable {
      const Strand& strand = self->strand_;
      asio::dispatch(strand, [self = std::move(self), direction, error] { self->waited(direction, error); });
    });
  }

  // On the strand. The caller (the wait's handler) keeps this watch alive.
  void waited(Direction direction, const asio_error_code& error) {
    (direction == watch_read ? read_waiting_ : write_waiting_) = false;
    const bool& wanted = direction == watch_read ? reading_ : writing_;
    if (error || context_ == nullptr || !wanted) return;
    // Either may free the context (a closed connection): forget() then clears context_.
    if (direction == watch_read) {
      readReplies();
    } else {
      redisAsyncHandleWrite(context_);
    }
    const bool waiting = direction == watch_read ? read_waiting_ : write_waiting_;
    if (context_ != nullptr && wanted && !waiting) wait(direction);
  }

  // Asio's reactor watches a descriptor edge-triggered, and keeps watching for writability once asked
  // to: each read wait then re-arms both, and a socket that is writable (as a connected one nearly always
  // is) wakes the loop once more for nothing. Registering the socket anew watches it for reads alone.
  void watchReadsOnly() {
    watches_writes_ = false;
    asio_error_code failed;  // then the socket is closed, its waits fail, and the calls on it time out
    socket_.assign(socket_.release(), failed);
  }

  // hiredis is freeing the context and is about to close its socket: hand the socket back first (the
  // waits end with operation_aborted).
  void forget() noexcept {
    context_ = nullptr;
    reading_ = writing_ = false;
    if (socket_.is_open()) socket_.release();
  }

  Strand strand_;
  asio::posix::stream_descriptor socket_;  // on the strand's inner executor: see wait()
  redisAsyncContext* context_;
  bool reading_ = false, writing_ = false;             // what hiredis wants watched
  bool read_waiting_ = false, write_waiting_ = false;  // a wait is outstanding
  bool flush_posted_ = false;                          // flushSoon() will write
  bool flushing_ = false;                              // inside that write: what is left waits for the reactor
  bool reading_replies_ = false;                       // inside readReplies(): it flushes when they have run
  bool watches_writes_ = false;                        // the reactor watches the socket for writability
};

}  // namespace swl::detail
