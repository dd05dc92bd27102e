#pragma once
// The calls of an event-loop connection (AsyncConnection on libevent, AsioSession on Asio), written once:
// one hiredis async context at a time, dialled when a call needs it and greeted (detail/io/async_protocol.hpp);
// each call sent once and ended once; a reply read as what it means; NOSCRIPT answered by one SCRIPT LOAD
// and the call sent again; and the reason a dropped context leaves its calls.
//
// A call that carries a deadline (ScriptCall::deadlineWord: under FailurePolicy::deny) gets it written in
// as it is sent, on Redis's clock (RedisClock, read by TIME after the handshake and again once stale): the
// moment its owner gives up on it. A call that fails before then (its connection dropped for another's
// timeout) is answered no earlier than its deadline: until then Redis, if it read the call, may still run
// it, and would record a request the failure policy refused.
//
// What belongs to the loop is the Owner's (it derives from AsyncCalls<Owner, Extra>, and Extra is what its
// calls carry besides):
//   void attach(redisAsyncContext&)            watch a new context's socket on the loop, or throw
//   void endSoon(Callback&&, std::exception_ptr)  end a call that failed before it was sent, on a later turn
//   void sent(Pending&)                        a call went out: its deadline or timer starts
//   void greeting(Pending&)                    a handshake command is about to go out
//   void replied()                             a reply came
//   bool answering() const                     false while the owner is torn down: replies are dropped
//   Time giveUpAt(const Pending&, Time now)    when the owner answers a call sent now that gets no reply
//   bool holdUntil(Time)                       call releaseHeld() at that time; false: it cannot wait

#include <swl/connection_options.hpp>
#include <swl/detail/io/async_protocol.hpp>
#include <swl/detail/io/call_steps.hpp>
#include <swl/detail/io/checked_options.hpp>
#include <swl/detail/io/circuit_breaker.hpp>
#include <swl/detail/io/dial.hpp>
#include <swl/detail/io/handshake.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/io/redis_clock.hpp>
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

namespace swl::detail {

template <class Owner, class Extra>
class AsyncCalls {
 public:
  // How a call ends: a non-error reply (valid during the callback) and no error, or a null view and the
  // error.
  using Callback = std::function<void(ReplyView reply, std::exception_ptr error)>;
  using Time = RedisClock::Local::time_point;

  AsyncCalls(const AsyncCalls&) = delete;
  AsyncCalls& operator=(const AsyncCalls&) = delete;

  /// "host:port" or "unix:/path": how messages name the server.
  const std::string& endpoint() const noexcept { return endpoint_; }
  const ConnectionOptions& options() const noexcept { return options_; }

 protected:
  struct Pending : Extra {
    std::string command;             // the whole RESP command, kept to resend after NOSCRIPT
    const Script* script = nullptr;  // null for the connection's own commands (AUTH, SELECT, SCRIPT LOAD)
    std::size_t deadline_at = 0;     // where its deadline's digits are in `command` (FormattedCall); 0: none
    std::size_t native_head = 0;     // the words the module's command replaces; 0: no such form (FormattedCall)
    std::size_t native_rest_at = 0;  // where the words that command keeps begin in `command`
    bool as_script = false;          // sent as the script even where the server has the module
    bool raw = false;                // a handshake command: its error reply is its answer too
    Time answer_not_before{};        // the deadline it carried: a failure is not answered before it
    Callback done;                   // empty once the call has ended
    bool repeated = false;
    std::uint64_t order = 0;  // send order, to know whether a SCRIPT LOAD went out after it
    redisAsyncContext* context = nullptr;
    std::exception_ptr failure;  // set when the connection drops the context: why this call got no reply
    AsyncCalls* owner = nullptr;
    typename std::list<Pending>::iterator position;
  };

  // `face` names the connection in messages ("swl::AsyncConnection"); `breaker` is shared by the
  // connections of a pool to one server, and made for this one when null.
  AsyncCalls(std::string_view face, const Address& address, const ConnectionOptions& options,
             std::shared_ptr<CircuitBreaker> breaker)
      : face_(face),
        address_(checkedAddress(face_, address)),
        endpoint_(address_.endpoint()),
        options_(checkedOptions(options)),
        dialer_(options_),
        breaker_(breaker ? std::move(breaker) : breakerFor(options_)) {
    if (options_.replica_acks > 0) {
      throw InvalidArgument(face_ +
                            ": replica_acks (WAIT) is not supported on the event loop; "
                            "use a blocking Connection, ConnectionPool or SentinelConnection for it");
    }
    if (options_.command_timeout.count() == 0) {
      throw InvalidArgument(face_ + ": command_timeout must be positive; it bounds every call");
    }
  }
  ~AsyncCalls() = default;

  // A call made of `call`, for its owner to add its own terms to and send.
  static Pending pendingOf(FormattedCall&& call) {
    Pending pending;
    pending.command = std::move(call.command);
    pending.script = call.script;
    pending.deadline_at = call.deadline_at;
    pending.native_head = call.native_head;
    pending.native_rest_at = call.native_rest_at;
    return pending;
  }

  void send(Pending&& pending) {
    redisAsyncContext* context = nullptr;
    try {
      context = connected();
    } catch (const Error&) {
      return owner().endSoon(std::move(pending.done), std::current_exception());
    }
    if (pending.deadline_at != 0) carryDeadline(pending);
    auto position = in_flight_.insert(in_flight_.end(), std::move(pending));
    position->position = position;
    position->owner = this;
    position->context = context;
    position->order = ++sent_;
    const std::string& command = asSent(*position);
    if (redisAsyncFormattedCommand(context, &AsyncCalls::onReply, &*position, command.data(), command.size()) !=
        REDIS_OK) {
      // The context is already shutting down; its teardown will not call back for this one.
      Callback done = std::move(position->done);
      in_flight_.erase(position);
      return owner().endSoon(std::move(done), std::make_exception_ptr(ConnectionError(lostMessage(context))));
    }
    owner().sent(*position);
  }

  // Frees `context`: hiredis calls back every call still in flight on it, and they fail with `why`.
  void drop(redisAsyncContext* context, const std::exception_ptr& why) {
    if (context == context_) context_ = nullptr;
    for (Pending& pending : in_flight_) {
      if (pending.context == context && !pending.failure) pending.failure = why;
    }
    redisAsyncFree(context);  // inside a hiredis callback this only marks it; hiredis frees it after
  }

  std::string closedMessage() const { return face_ + " to " + endpoint_ + " is closed"; }

  // A failure of a call sent with a deadline, held until then; the owner's timer releases it.
  struct Held {
    Time until;
    Callback done;
    std::exception_ptr error;
  };

  // The held failures due by now are answered; the owner is told when the next one is.
  void releaseHeld() {
    const Time now = RedisClock::Local::now();
    std::vector<Held> due;
    for (auto held = held_.begin(); held != held_.end();) {
      if (held->until <= now) {
        due.push_back(std::move(*held));
        held = held_.erase(held);
      } else {
        ++held;
      }
    }
    if (!held_.empty()) owner().holdUntil(earliestHeld());
    for (Held& each : due) each.done(ReplyView(), each.error);
  }

  // When the first held failure is due; held_ is not empty.
  Time earliestHeld() const {
    return std::min_element(held_.begin(), held_.end(), [](const Held& a, const Held& b) { return a.until < b.until; })
        ->until;
  }

  // Every held failure, answered now (the owner is going away).
  void releaseAllHeld() {
    std::vector<Held> all;
    all.swap(held_);
    for (Held& each : all) each.done(ReplyView(), each.error);
  }
  // Every held failure, destroyed unanswered (the loop that would answer it is gone).
  void forgetHeld() noexcept { held_.clear(); }

  std::string face_;
  Address address_;
  std::string endpoint_;
  ConnectionOptions options_;
  Dialer dialer_;
  std::shared_ptr<CircuitBreaker> breaker_;
  redisAsyncContext* context_ = nullptr;  // freed by drop(), or by hiredis itself when the connection ends
  bool connected_ = false;                // context_ has finished connecting
  bool closed_ = false;                   // for good: calls fail at once
  std::list<Pending> in_flight_;          // send order; hiredis holds a pointer to each until it calls back
  std::uint64_t sent_ = 0;
  ScriptLoads loads_;
  RedisClock clock_;            // Redis's, on the live context
  bool module_loaded_ = false;  // the live context's server answered the question: it has the module
  std::string native_;          // the last call sent as the module's command (hiredis copies it)
  bool time_asked_ = false;     // a TIME is in flight
  std::vector<Held> held_;      // failures of calls whose deadlines have not come

 private:
  Owner& owner() noexcept { return static_cast<Owner&>(*this); }

  // The live context, connecting first when there is none. Commands sent before the connection is up
  // wait in hiredis's buffer, behind the handshake's.
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
    try {
      owner().attach(*context);
    } catch (const Error&) {
      redisAsyncFree(context);
      throw;
    }
    redisAsyncSetConnectCallback(context, &AsyncCalls::onConnect);
    redisAsyncSetDisconnectCallback(context, &AsyncCalls::onDisconnect);
    context_ = context;
    connected_ = false;
    clock_.forget();
    time_asked_ = false;
    module_loaded_ = false;
    greet();
    return context_;
  }

  // The handshake (detail/io/handshake.hpp), queued ahead of every call: the calls sent before the answer
  // to the module's question comes go as the script. A refusal drops the connection: nothing sent behind
  // it can succeed.
  void greet() {
    auto handshake = std::make_shared<const Handshake>(options_, endpoint_);
    for (const Handshake::Command& command : handshake->commands()) {
      Pending pending;
      pending.command = command.formatted;
      pending.raw = true;
      const bool times = command.purpose == Handshake::Purpose::time;
      time_asked_ = time_asked_ || times;
      pending.done = [this, handshake, &command, times, context = context_](ReplyView reply, std::exception_ptr error) {
        if (times) time_asked_ = false;
        if (error || context != context_) return;  // the connection failed on its own: its calls know why
        try {
          handshake->read(command, reply, RedisClock::Local::now(), clock_, module_loaded_);
        } catch (const Error& refusal) {
          breaker_->recordFailure(refusal.what(), causeOf(refusal));
          drop(context_, std::current_exception());
        }
      };
      const bool greets =
          command.purpose == Handshake::Purpose::greeting || command.purpose == Handshake::Purpose::select;
      if (greets) owner().greeting(pending);
      send(std::move(pending));
    }
  }

  // `pending`'s command as it goes out: as the module's command where the server has it.
  const std::string& asSent(const Pending& pending) {
    if (pending.script == nullptr || pending.as_script || pending.native_head == 0 ||
        !sendsNative(options_, module_loaded_)) {
      return pending.command;
    }
    formatNative(native_, pending.command, pending.native_head, pending.native_rest_at,
                 pending.script->nativeCommand());
    return native_;
  }

  // The deadline of `pending`, written into it on Redis's clock; none while the clock is not known.
  void carryDeadline(Pending& pending) {
    const Time now = RedisClock::Local::now();
    if (clock_.stale(now)) askTime();
    if (!clock_.known()) return;
    pending.answer_not_before = owner().giveUpAt(pending, now);
    clock_.writeDeadline(&pending.command[pending.deadline_at], pending.answer_not_before);
  }

  // TIME, for Redis's clock; one at a time.
  void askTime() {
    if (time_asked_) return;
    time_asked_ = true;
    static constexpr std::string_view kTime[] = {"TIME"};
    Pending asking;
    asking.command = formattedCommand(kTime, 1);
    asking.done = [this](ReplyView reply, std::exception_ptr error) {
      time_asked_ = false;
      if (!error) clock_.observe(reply, RedisClock::Local::now());
    };
    send(std::move(asking));
  }

  static void onReply(redisAsyncContext* context, void* reply, void* privdata) noexcept {
    auto& pending = *static_cast<Pending*>(privdata);
    AsyncCalls& self = *pending.owner;
    Pending taken = std::move(pending);
    self.in_flight_.erase(taken.position);
    self.owner().replied();
    self.answer(context, ReplyView(static_cast<const redisReply*>(reply)), std::move(taken));
  }

  void answer(redisAsyncContext* context, ReplyView reply, Pending&& pending) {
    if (!owner().answering()) return;
    if (reply.isNull()) {
      // The context is going away: the next call connects afresh.
      if (context == context_) context_ = nullptr;
      if (!pending.done) return;
      std::exception_ptr why =
          pending.failure ? pending.failure : std::make_exception_ptr(ConnectionError(lostMessage(context)));
      const Time until = pending.answer_not_before;
      if (RedisClock::Local::now() < until &&
          owner().holdUntil(held_.empty() ? until : std::min(until, earliestHeld()))) {
        held_.push_back({until, std::move(pending.done), std::move(why)});
        return;
      }
      return pending.done(ReplyView(), why);
    }
    breaker_->recordSuccess();
    if (!pending.done) return;        // ended already (at its deadline, or cancelled): the late reply is dropped
    if (pending.script == nullptr) {  // the connection's own command
      if (!reply.isError() || pending.raw) return pending.done(reply, nullptr);
      return pending.done(ReplyView(), std::make_exception_ptr(
                                           redisError<ReplyError>(endpoint_, ": a command failed: ", reply.text())));
    }
    if (!reply.isError()) return pending.done(reply, nullptr);  // the answer, as nearly every call ends
    // What an error reply calls for is the reply machine's to say (detail/io/call_steps.hpp); a call sent
    // again after NOSCRIPT loads nothing more.
    CallSteps::Terms terms(options_);
    terms.loads_script = !pending.repeated;
    const CallSteps::Next next =
        CallSteps(*pending.script, face_, terms).replied(reply, endpoint_, CallSteps::Clock::now());
    switch (next.step) {
      case CallSteps::Step::load_then_resend:
        return repeatAfterLoad(std::move(pending));
      case CallSteps::Step::resend_as_script:
        if (next.module_gone) module_loaded_ = false;
        pending.as_script = true;
        return send(std::move(pending));
      case CallSteps::Step::give_up:
        return pending.done(ReplyView(), next.error);
      default:
        return pending.done(reply, nullptr);
    }
  }

  // NOSCRIPT: loaded once for every call that met the same empty cache, then sent again (ScriptLoads).
  void repeatAfterLoad(Pending&& pending) {
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
    auto& self = *static_cast<AsyncCalls*>(context->data);
    if (context != self.context_) return;
    if (status == REDIS_OK) {
      self.connected_ = true;
      return;
    }
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
    auto& self = *static_cast<AsyncCalls*>(context->data);
    if (context == self.context_) self.context_ = nullptr;
  }

  std::string lostMessage(const redisAsyncContext* context) const {
    return aboutRedis(endpoint_, ": connection lost",
                      (context->errstr[0] != '\0' ? " (" + std::string(context->errstr) + ")" : std::string()));
  }
};

}  // namespace swl::detail
