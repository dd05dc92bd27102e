#pragma once
// hiredis's event hooks for one async context, on a libevent loop: what AsyncConnection runs on, in place
// of hiredis's own libevent adapter. The adapter re-registers the socket with the kernel on every turn
// (each write is armed, then disarmed, and the read event with it): four epoll_ctl calls per round of
// replies. Here the read event stays armed while hiredis wants reads, and what the loop's callbacks queue
// is written once they have run (as asio/detail/watch.hpp does on Asio): a connected socket is nearly
// always writable, so writability is waited for only when its buffer is full, or while it connects.

#include <event2/event.h>
#include <hiredis/async.h>

#include <memory>

namespace swl::detail {

class LibeventWatch : public std::enable_shared_from_this<LibeventWatch> {
 public:
  // Watches `context`, which must have no event hooks yet, until hiredis frees it (its cleanup hook).
  // False when libevent cannot make the events.
  static bool attach(event_base* loop, redisAsyncContext& context) {
    auto watch = std::make_shared<LibeventWatch>(loop, context);
    if (!watch->read_ || !watch->write_ || !watch->flush_) return false;
    watch->self_ = watch;  // the context owns its watch: the cleanup hook lets go
    context.ev.data = watch.get();
    context.ev.addRead = [](void* data) { static_cast<LibeventWatch*>(data)->wantRead(true); };
    context.ev.delRead = [](void* data) { static_cast<LibeventWatch*>(data)->wantRead(false); };
    context.ev.addWrite = [](void* data) { static_cast<LibeventWatch*>(data)->wantWrite(); };
    context.ev.delWrite = [](void* data) { static_cast<LibeventWatch*>(data)->stopWriting(); };
    context.ev.cleanup = [](void* data) { static_cast<LibeventWatch*>(data)->forget(); };
    return true;
  }

  LibeventWatch(event_base* loop, redisAsyncContext& context)
      : context_(&context),
        read_(event_new(loop, context.c.fd, EV_READ | EV_PERSIST, &LibeventWatch::onRead, this)),
        write_(event_new(loop, context.c.fd, EV_WRITE, &LibeventWatch::onWritable, this)),
        flush_(event_new(loop, -1, 0, &LibeventWatch::onFlush, this)) {}
  LibeventWatch(const LibeventWatch&) = delete;
  LibeventWatch& operator=(const LibeventWatch&) = delete;

 private:
  struct EventDeleter {
    void operator()(event* handle) const noexcept { event_free(handle); }
  };
  using EventPtr = std::unique_ptr<event, EventDeleter>;

  void wantRead(bool wanted) {
    if (wanted == reading_ || !read_) return;
    reading_ = wanted;
    if (wanted) {
      event_add(read_.get(), nullptr);
    } else {
      event_del(read_.get());
    }
  }

  void wantWrite() {
    writing_ = true;
    if (write_armed_ || !write_) return;
    if (!flushing_ && (context_->c.flags & REDIS_CONNECTED) != 0) {
      if (!flush_due_) event_active(flush_.get(), 0, 0);
      flush_due_ = true;
    } else {
      event_add(write_.get(), nullptr);
      write_armed_ = true;
    }
  }

  void stopWriting() {
    writing_ = false;
    if (!write_armed_) return;
    event_del(write_.get());
    write_armed_ = false;
  }

  // hiredis is freeing the context: no event of it may fire again. A callback on the stack keeps this
  // object alive until it returns.
  void forget() noexcept {
    context_ = nullptr;
    read_.reset(), write_.reset(), flush_.reset();
    const auto let_go = std::move(self_);
  }

  static void onRead(evutil_socket_t, short, void* data) {
    const auto self = static_cast<LibeventWatch*>(data)->shared_from_this();
    if (self->context_ != nullptr) redisAsyncHandleRead(self->context_);
  }

  static void onWritable(evutil_socket_t, short, void* data) {
    const auto self = static_cast<LibeventWatch*>(data)->shared_from_this();
    self->write_armed_ = false;
    if (self->context_ != nullptr && self->writing_) redisAsyncHandleWrite(self->context_);
  }

  // What the loop's callbacks queued in this turn goes out in one write; what the socket cannot take yet
  // waits for writability.
  static void onFlush(evutil_socket_t, short, void* data) {
    const auto self = static_cast<LibeventWatch*>(data)->shared_from_this();
    self->flush_due_ = false;
    if (self->context_ == nullptr || !self->writing_ || self->write_armed_) return;
    self->flushing_ = true;
    redisAsyncHandleWrite(self->context_);  // may free the context (a broken connection)
    self->flushing_ = false;
  }

  redisAsyncContext* context_;
  EventPtr read_, write_, flush_;
  std::shared_ptr<LibeventWatch> self_;
  bool reading_ = false, writing_ = false;  // what hiredis wants watched
  bool write_armed_ = false;                // write_ is pending
  bool flush_due_ = false;                  // flush_ is active
  bool flushing_ = false;                   // inside onFlush's write: what is left waits for writability
};

}  // namespace swl::detail
