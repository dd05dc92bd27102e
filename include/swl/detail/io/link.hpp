#pragma once
// detail::Link: one hiredis context to one Redis, owned, reconnected on demand, with the I/O that
// Connection (its face for users), the pool, the cluster and Sentinel build on: one call's round trip (with
// TIME, ASKING or WAIT around it when it needs them), replies left unjudged, pipelines, the circuit breaker
// per server. A batch of calls is detail/io/batch.hpp, built on the same link.

#include <swl/connection_options.hpp>
#include <swl/detail/io/call_steps.hpp>
#include <swl/detail/io/checked_options.hpp>
#include <swl/detail/io/circuit_breaker.hpp>
#include <swl/detail/io/dial.hpp>
#include <swl/detail/io/handshake.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/io/native_module.hpp>
#include <swl/detail/io/outgoing.hpp>
#include <swl/detail/io/redis_clock.hpp>
#include <swl/detail/script/deadline.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <sys/socket.h>
#include <sys/types.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::detail {

// The commands of one word a link sends beside its calls, as hiredis takes them.
struct OneWordCommand {
  const char* word[1];
  std::size_t length[1];
  Words words() const noexcept { return {word, length, 1}; }
};
inline constexpr OneWordCommand kTimeCommand{{"TIME"}, {4}};
inline constexpr OneWordCommand kAskingCommand{{"ASKING"}, {6}};

class Link {
 public:
  // Returns a connected context (dial(), or a user's factory through ready()); called on every (re)connect.
  using Open = std::function<ContextPtr()>;

  Link(Open open, std::string endpoint, ConnectionOptions options)
      : open_(std::move(open)),
        endpoint_(std::move(endpoint)),
        options_(checkedOptions(options)),
        breaker_(breakerFor(options_)),
        replica_acks_(std::to_string(options_.replica_acks)),
        replica_ack_timeout_(std::to_string(replicaAckTimeout(options_).count())) {}

  Link(Link&&) noexcept = default;
  Link& operator=(Link&&) noexcept = default;

  // Sends one command and returns its reply, error replies included (they are answers, not failures).
  // Arguments are binary-safe. Throws ConnectionError (TimeoutError, AuthError) when there is no answer.
  Reply command(const std::string_view* argv, std::size_t argc) {
    return commandOn(connected(), HiredisArgv(argv, argc).words());
  }

  Reply command(std::initializer_list<std::string_view> argv) { return command(argv.begin(), argv.size()); }

  // command() with a shorter wait than the command timeout, for a caller whose own time is running out
  // (a cluster reading its slot map after a failed call).
  Reply command(std::initializer_list<std::string_view> argv, std::chrono::milliseconds within) {
    redisContext& context = connected();
    const bool shorter = options_.command_timeout.count() == 0 || within < options_.command_timeout;
    if (shorter) redisSetTimeout(&context, toTimeval(std::max(within, std::chrono::milliseconds(1))));
    Reply reply = commandOn(context, HiredisArgv(argv.begin(), argv.size()).words());
    if (shorter && context_) redisSetTimeout(context_.get(), toTimeval(options_.command_timeout));
    return reply;
  }

  // Sends `count` commands in one write, then reads their replies in order, handing each to
  // `on_reply(index, Reply)`. `argv_of(index)` gives a command's Words.
  // If the connection fails midway, the replies that arrived have been handed over and the error is
  // thrown for the rest (they may or may not have run).
  template <class ArgvOf, class OnReply>
  void pipeline(std::size_t count, ArgvOf&& argv_of, OnReply&& on_reply) {
    queue(count, argv_of);
    receive(count, on_reply);
  }

  // One script call's round trip, its reply unjudged: an error reply (NOSCRIPT, MOVED, ...) is for the
  // caller's CallSteps to answer. Most calls go out alone; one preceded by TIME (its deadline needs a
  // fresh reading of Redis's clock) or ASKING (`asking`, as the target of an ASK redirection wants), or
  // followed by WAIT, goes in a pipeline. The lone call is sent from here, so that a decision reaches
  // hiredis five frames down (bench/call_path.sh).
  //
  // The call goes as the swl-native module's command where the server has it (known once connected:
  // the handshake asks), unless `as_script`; a server that answers it as unknown has lost the module
  // (CallSteps' module_gone), and this link's next calls go as the script until it connects again.
  Reply evaluate(const ScriptCall& call, bool asking = false, bool as_script = false) {
    const bool time = call.deadlineWord() != 0 && clockStale();
    bool native = false;
    Reply reply;
    if (asking || time || waits() != 0) {
      reply = evaluatePipelined(call, asking, time, as_script, native);
    } else {
      redisContext& context = connected();
      native = !as_script && sendsNative(options_, module_loaded_);
      const Outgoing outgoing(wordsOf(call, native), clock_, options_.command_timeout);
      reply = received(redisCommandArgv(&context, outgoing.count(), outgoing.pointers(), outgoing.lengths()));
    }
    if (native && nativeRefusalOf(*reply, call.script()) == NativeRefusal::out_of_reach) forgetModule();
    return reply;
  }

  // Makes the server know `script` (SCRIPT LOAD), as CallSteps asks on NOSCRIPT.
  void load(const Script& script) {
    const Reply reply = command({"SCRIPT", "LOAD", script.text()});
    if (reply->isError()) {
      throw redisError<ReplyError>(endpoint_, ": SCRIPT LOAD of ", script.name(), " failed: ", reply->text());
    }
    if (!reply->isString() || reply->text() != script.sha()) {
      throw redisError<ProtocolError>(endpoint_, ": SCRIPT LOAD of ", script.name(),
                                      " did not return the expected SHA-1 ", script.sha());
    }
  }

  bool isConnected() const noexcept { return context_ != nullptr; }

  // What the reply machine may do for a call on this link.
  CallSteps::Terms stepTerms() const noexcept { return CallSteps::Terms(options_); }

  // `call`'s words as this link sends them: as the module's command where its server has it.
  Words wordsFor(const ScriptCall& call) const noexcept { return wordsOf(call, sendsNative(options_, module_loaded_)); }

  // The server answered the module's command as unknown (CallSteps' module_gone): the module was
  // unloaded, or the connection reached another server. Calls go as the script until the next connect asks.
  void forgetModule() noexcept { module_loaded_ = false; }

  // For a client that learns where its server is from elsewhere (Sentinel): whenever `epoch()` moves on
  // from what it was when this link connected, the open connection is dropped before the next command,
  // which then connects again, through `open`, wherever that leads now.
  void followEpoch(std::function<std::uint64_t()> epoch) { epoch_ = std::move(epoch); }

  // Connects (with AUTH and SELECT) and hands the context over, for a client that reads it itself (a
  // subscriber); the link connects again for its own next command.
  ContextPtr handOver() {
    connected();
    return std::move(context_);
  }

  // Connections to one server share one breaker (a pool's, a cluster node's).
  const std::shared_ptr<CircuitBreaker>& breaker() const noexcept { return breaker_; }
  void shareBreaker(std::shared_ptr<CircuitBreaker> breaker) noexcept { breaker_ = std::move(breaker); }

  // For a client that learns the server behind an open connection is the wrong one (a master demoted to
  // a replica): the next command connects again, through `open`, which may lead elsewhere.
  void disconnect() noexcept { context_.reset(); }

  // "host:port", "unix:/path" or the adopter's description; used in every error message.
  const std::string& endpoint() const noexcept { return endpoint_; }

  // The parts a batch of calls is made of (detail/io/batch.hpp), each a step of pipeline() or of the
  // WAIT and TIME around the calls.

  // Writes `count` commands, `argv_of(index)` each, into the context's buffer: nothing is sent yet.
  template <class ArgvOf>
  void queue(std::size_t count, ArgvOf&& argv_of) {
    redisContext& context = connected();
    for (std::size_t i = 0; i < count; ++i) {
      const Outgoing outgoing(argv_of(i), clock_, options_.command_timeout);
      if (redisAppendCommandArgv(&context, outgoing.count(), outgoing.pointers(), outgoing.lengths()) != REDIS_OK) {
        broke("queueing a pipelined command");  // nothing was written yet: the half-built batch goes with it
      }
    }
  }

  // Writes what queue() gathered without waiting for answers.
  void flush() {
    int done = 0;
    while (done == 0) {
      if (redisBufferWrite(context_.get(), &done) != REDIS_OK) broke("sending pipelined commands");
    }
  }

  // Reads `count` replies in order, handing each to `on_reply(index, Reply)`.
  template <class OnReply>
  void receive(std::size_t count, OnReply&& on_reply) {
    for (std::size_t i = 0; i < count; ++i) {
      void* reply = nullptr;
      if (!context_ || redisGetReply(context_.get(), &reply) != REDIS_OK || reply == nullptr) {
        broke("waiting for pipelined replies");
      }
      answered();
      try {
        on_reply(i, Reply(static_cast<redisReply*>(reply)));
      } catch (...) {
        context_.reset();  // the replies still unread would otherwise answer the next commands
        throw;
      }
    }
  }

  // Redis's clock, from TIME's reply just read (an error reply, from an ACL without TIME, leaves it
  // unknown: the calls then carry no deadline).
  void readTime(ReplyView reply) { clock_.observe(reply, RedisClock::Local::now()); }

  // Whether TIME goes out ahead of a call that carries a deadline: the connection waits for replies (a
  // deadline is written only then), and its reading of Redis's clock is stale.
  bool clockStale() const { return options_.command_timeout.count() != 0 && clock_.stale(RedisClock::Local::now()); }

  // WAIT after a call, when ConnectionOptions::replica_acks asks for it: how many of those commands go.
  std::size_t waits() const noexcept { return options_.replica_acks > 0 ? 1 : 0; }

  // WAIT's words, pointing into this link's texts (made again for each use: a moved link's strings moved).
  Words waitWords() {
    wait_pointers_ = {"WAIT", replica_acks_.data(), replica_ack_timeout_.data()};
    wait_lengths_ = {4, replica_acks_.size(), replica_ack_timeout_.size()};
    return {wait_pointers_.data(), wait_lengths_.data(), wait_pointers_.size()};
  }

  // The answer to WAIT: the writes before it are on enough replicas, or the call fails: it ran, and a
  // failover now could lose it, so no one may take its answer for a durable one.
  void requireAcknowledged(ReplyView acknowledged) const {
    const CallSteps::Next next =
        CallSteps::acknowledged(acknowledged, options_.replica_acks, endpoint_, replica_ack_timeout_);
    if (next.step == CallSteps::Step::give_up) std::rethrow_exception(next.error);
  }

 private:
  // The live context, connecting first when there is none; throws CircuitOpenError while the server's
  // circuit is open.
  redisContext& connected() {
    const bool usable =
        context_ && (answeredLately() || !closedByServer(*context_)) && (!epoch_ || epoch_() == connected_epoch_);
    breaker_->admit(endpoint_);  // an open circuit refuses the call even on a usable connection
    if (usable) return *context_;
    context_.reset();
    clock_.forget();
    module_loaded_ = false;
    try {
      connected_epoch_ = epoch_ ? epoch_() : 0;
      context_ = handshake(open_());
      answered_at_ = RedisClock::Local::now();
      return *context_;
    } catch (const Error& error) {
      breaker_->recordFailure(error.what(), detail::causeOf(error));
      throw;
    }
  }

  // hiredis cannot use a context again once it reported an error: it is dropped, so the next command
  // reconnects, and a timeout opens the circuit.
  [[noreturn]] void broke(std::string_view doing) {
    const ContextPtr broken = std::move(context_);
    if (!broken) throw redisError<ConnectionError>(endpoint_, ": no connection ", doing);
    try {
      throwContextError(*broken, endpoint_, doing);
    } catch (const TimeoutError& timeout) {
      breaker_->recordFailure(timeout.what());
      throw;
    }
  }

  // The handshake (detail/io/handshake.hpp) in one write, its replies read in order.
  ContextPtr handshake(ContextPtr context) {
    const Handshake handshake(options_, endpoint_);
    for (const Handshake::Command& command : handshake.commands()) {
      if (redisAppendFormattedCommand(context.get(), command.formatted.data(), command.formatted.size()) != REDIS_OK) {
        throwContextError(*context, endpoint_, "during the handshake");
      }
    }
    bool module_loaded = false;
    for (const Handshake::Command& command : handshake.commands()) {
      void* reply = nullptr;
      if (redisGetReply(context.get(), &reply) != REDIS_OK || reply == nullptr) {
        throwContextError(*context, endpoint_, "during the handshake");
      }
      const Reply read(static_cast<redisReply*>(reply));
      handshake.read(command, *read, RedisClock::Local::now(), clock_, module_loaded);
    }
    module_loaded_ = module_loaded;
    return context;
  }

  // Whether the context answered within ConnectionOptions::idle_check_after: a busy connection sends
  // without asking its socket first, as a bare hiredis loop does (bench/one_in_flight.sh).
  bool answeredLately() const noexcept {
    return options_.idle_check_after.count() != 0 &&
           RedisClock::Local::now() - answered_at_ < options_.idle_check_after;
  }

  // A server that restarted, or closed an idle client, has already sent EOF: a peek sees it, so the
  // command goes out on a fresh connection instead of failing on a dead one. It costs one syscall. Over
  // TLS the close-notify record comes before the EOF, so bytes waiting there are OpenSSL's to judge.
  static bool closedByServer(const redisContext& context) noexcept {
    char byte;
    const ssize_t peeked = ::recv(context.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (peeked > 0) return closedTls(context);
    return peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

  // One call in a pipeline: preceded by TIME when `time` (the clock's reading is stale) and by ASKING
  // when `asking`, and followed by WAIT when replicas must acknowledge it.
  Reply evaluatePipelined(const ScriptCall& call, bool asking, bool time, bool as_script, bool& native) {
    const std::size_t before = (time ? 1 : 0) + (asking ? 1 : 0);
    Reply reply, acknowledged;
    pipeline(
        before + 1 + waits(),
        [&](std::size_t i) {
          if (i < before) return time && i == 0 ? kTimeCommand.words() : kAskingCommand.words();
          if (i > before) return waitWords();
          native = !as_script && sendsNative(options_, module_loaded_);  // connected by now
          return wordsOf(call, native);
        },
        [&](std::size_t i, Reply answer) {
          if (time && i == 0) readTime(*answer);
          if (i == before) reply = std::move(answer);
          if (i > before) acknowledged = std::move(answer);
        });
    if (waits() != 0 && !reply->isError()) requireAcknowledged(*acknowledged);
    return reply;
  }

  static std::chrono::milliseconds replicaAckTimeout(const ConnectionOptions& options) {
    if (options.command_timeout.count() == 0) return std::chrono::milliseconds(1000);
    return std::max(std::chrono::milliseconds(1), options.command_timeout / 2);
  }

  Reply commandOn(redisContext& context, const Words& command) {
    const Outgoing outgoing(command, clock_, options_.command_timeout);
    return received(redisCommandArgv(&context, outgoing.count(), outgoing.pointers(), outgoing.lengths()));
  }

  // What redisCommandArgv returned: the reply, or (null) the context's error, which breaks it.
  Reply received(void* reply) {
    if (reply == nullptr) broke("waiting for a reply");
    answered();
    return Reply(static_cast<redisReply*>(reply));
  }

  // A reply came: the server is up, and the connection was alive just now.
  void answered() {
    breaker_->recordSuccess();
    answered_at_ = RedisClock::Local::now();
  }

  Open open_;
  std::string endpoint_;
  ConnectionOptions options_;
  ContextPtr context_;
  std::shared_ptr<CircuitBreaker> breaker_;
  std::string replica_acks_;
  std::string replica_ack_timeout_;
  std::array<const char*, 3> wait_pointers_;
  std::array<std::size_t, 3> wait_lengths_;
  std::function<std::uint64_t()> epoch_;
  std::uint64_t connected_epoch_ = 0;
  RedisClock clock_;
  bool module_loaded_ = false;                   // the server answered the handshake's question: it has the module
  RedisClock::Local::time_point answered_at_{};  // the context's last reply (its handshake's, at first)
};

// One call run to its answer on `link`, from its first `reply`: an answer ends it there (no steps, no
// clock read), and an error reply goes to the reply machine, which has the script loaded and the call
// sent once more on NOSCRIPT, or the call sent as the script where the module refused it, or gives up
// with the error, thrown. `sends_again(reply)` may first ask for
// the call again, having done what that needs (Sentinel, after READONLY); Connection asks for nothing.
// `described` names the client in the machine's messages.
template <class SendsAgain>
Reply runToAnswer(Link& link, const ScriptCall& call, Reply reply, std::string_view described,
                  SendsAgain&& sends_again) {
  if (!reply->isError()) return reply;  // the answer, as nearly every call ends
  CallSteps steps(call.script(), described, link.stepTerms());
  bool as_script = false;
  for (;;) {
    if (sends_again(*reply)) {
      reply = link.evaluate(call, false, as_script);
      continue;
    }
    const CallSteps::Next next = steps.replied(*reply, link.endpoint(), CallSteps::Clock::now());
    switch (next.step) {
      case CallSteps::Step::done:
        return reply;
      case CallSteps::Step::load_then_resend:
        link.load(call.script());
        break;
      case CallSteps::Step::resend_as_script:
        as_script = true;
        break;
      default:
        std::rethrow_exception(next.error);
    }
    reply = link.evaluate(call, false, as_script);
  }
}

}  // namespace swl::detail
