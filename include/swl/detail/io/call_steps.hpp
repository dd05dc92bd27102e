#pragma once
// What to do with one script call's answer, without I/O: the reply machine every connection shares (the
// blocking connection, the event loops' calls, the Cluster). Given what came back, it names the next
// step, and the caller does the I/O that step needs and tells it what came of that:
//
//   done               the reply is the call's answer
//   load_then_resend   NOSCRIPT: SCRIPT LOAD, then the same call once more (a second NOSCRIPT gives up)
//   resend_as_script   a call sent as the swl-native module's command that the module could not take (a
//                      set of swl 0.2/0.3: LAYOUT), or that the server did not know or the ACL user may
//                      not run (`module_gone`: the connection's next calls go as the script too): the
//                      call again, as the script (detail/io/native_module.hpp)
//   resend_to          MOVED: the call again, to the node that owns the slot now (after `pause`, when the
//                      redirections go back and forth)
//   resend_asking      ASK: the call again, to the node the key has moved to, after ASKING
//   pause_then_resend  TRYAGAIN, CLUSTERDOWN, LOADING: the call again after `pause`, while the call's time
//                      allows one more
//   give_up            with `error`: the error reply read as the error it stands for (EXPIRED, a call
//                      Redis ran past its deadline, is a TimeoutError), or why the call went no further
//
// A reply that is not an error is always `done`, so the single-call paths (runToAnswer in link.hpp, for
// Connection and Sentinel, and the event loops' calls) read that themselves and build the steps only for
// an error reply: an answer costs no clock read. The Cluster builds them before its first reply, as its
// loop begins there.
//
// A call whose fate is unknown (no reply came: a timeout, a broken connection) is never sent again: it may
// have run. The shape of boost.redis's detail/exec_fsm.hpp: a state machine over what was sent and what
// came back, tested alone over scripted replies (tests/test_call_steps.cpp).

#include <swl/connection_options.hpp>
#include <swl/detail/io/native_module.hpp>
#include <swl/detail/io/topology.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

namespace swl::detail {

class CallSteps {
 public:
  using Clock = std::chrono::steady_clock;

  enum class Step { done, load_then_resend, resend_as_script, resend_to, resend_asking, pause_then_resend, give_up };

  struct Next {
    Step step = Step::done;
    std::optional<Redirection> redirection;  // resend_to, resend_asking: where to
    std::chrono::milliseconds pause{0};      // before the call goes out again
    std::exception_ptr error;                // give_up: what the caller is told
    bool module_gone = false;                // resend_as_script: the module is out of reach (unknown, NOPERM)
  };

  // What one call may do: load its script once on NOSCRIPT (not again for a call that is already the
  // second sending, as an event loop's calls keep no steps between sendings); follow a Cluster's
  // redirections (at most `max_redirects`); and pause for a node that asks it to come back, each pause
  // ending before `give_up_at`.
  struct Terms {
    Terms() = default;
    // A connection's terms: whether its options require the module.
    explicit Terms(const ConnectionOptions& options) noexcept
        : module_required(options.native_module == NativeModule::required) {}

    bool loads_script = true;
    bool follows_redirections = false;
    int max_redirects = 16;
    Clock::time_point give_up_at = Clock::time_point::max();
    bool module_required = false;  // ConnectionOptions::native_module: a server without it is an error
  };

  // The steps of a call of `script`; `described` names the client in messages ("swl::ClusterConnection
  // to 127.0.0.1:7000"), and must outlive the steps.
  CallSteps(const Script& script, std::string_view described, const Terms& terms)
      : script_(&script), described_(described), terms_(terms), pacing_(terms.give_up_at) {}

  // The reply `endpoint` gave, at `now`; `answering` is its address, to read a redirection by (a
  // Cluster's calls only).
  Next replied(ReplyView reply, std::string_view endpoint, Clock::time_point now, const Address* answering = nullptr) {
    if (!reply.isError()) return {};
    if (reply.isError("NOSCRIPT") && terms_.loads_script && !loaded_) {
      loaded_ = true;
      return {Step::load_then_resend, std::nullopt, std::chrono::milliseconds(0), nullptr};
    }
    if (const NativeRefusal refusal = nativeRefusalOf(reply, *script_); refusal != NativeRefusal::none) {
      return refusedNative(refusal, reply, endpoint);
    }
    if (terms_.follows_redirections && answering != nullptr) {
      if (std::optional<Redirection> redirection = parseRedirection(reply, *answering)) {
        return redirected(std::move(*redirection), reply, endpoint, now);
      }
      if (isRetryLater(reply) || reply.isError("LOADING")) return askedToComeBack(reply, endpoint, now);
    }
    return giveUp(scriptError(endpoint, *script_, reply));
  }

  // No reply came (a timeout, a broken connection, no connection at all): the call ends with `error`.
  Next failed(std::exception_ptr error) const { return giveUp(std::move(error)); }

  // The answer to the WAIT that followed a call whose writes must reach `replicas` replicas: done, or a
  // TimeoutError when fewer acknowledged them (it ran, and a failover now could lose it).
  static Next acknowledged(ReplyView wait_reply, int replicas, std::string_view endpoint,
                           std::string_view wait_timeout_ms) {
    if (wait_reply.isInteger() && wait_reply.integer() >= replicas) return {};
    return giveUp(std::make_exception_ptr(redisError<TimeoutError>(
        endpoint, ": ", (wait_reply.isInteger() ? std::to_string(wait_reply.integer()) : std::string("no")), " of ",
        std::to_string(replicas), " replicas acknowledged the write within ", wait_timeout_ms,
        " ms (WAIT), so a failover could lose it")));
  }

  // How many redirections the call has followed.
  int redirects() const noexcept { return redirects_; }

 private:
  Next redirected(Redirection redirection, ReplyView reply, std::string_view endpoint, Clock::time_point now) {
    ++redirects_;
    Next next{redirection.kind == Redirection::Kind::ask ? Step::resend_asking : Step::resend_to, std::nullopt,
              std::chrono::milliseconds(0), nullptr};
    // The first redirection is followed at once; more mean the slot moves under the call: pause between.
    std::optional<std::chrono::milliseconds> pause = std::chrono::milliseconds(0);
    if (redirects_ > 1 && redirects_ <= terms_.max_redirects) pause = pacing_.next(now);
    if (redirects_ > terms_.max_redirects || !pause) {
      return giveUp(std::make_exception_ptr(ReplyError(
          std::string(described_) + ": still redirected after " + std::to_string(redirects_ - 1) +
          " redirections for script " + script_->name() + " on hash slot " + std::to_string(redirection.slot) +
          "; last from " + std::string(endpoint) + ": " + std::string(reply.text()))));
    }
    next.redirection = std::move(redirection);
    next.pause = *pause;
    return next;
  }

  Next askedToComeBack(ReplyView reply, std::string_view endpoint, Clock::time_point now) {
    const std::optional<std::chrono::milliseconds> pause = pacing_.next(now);
    if (!pause) {
      return giveUp(std::make_exception_ptr(ReplyError(std::string(described_) + ": " + std::string(endpoint) +
                                                       " still answers '" + std::string(reply.text()) +
                                                       "' as the call's time runs out")));
    }
    return {Step::pause_then_resend, std::nullopt, *pause, nullptr};
  }

  Next refusedNative(NativeRefusal refusal, ReplyView reply, std::string_view endpoint) const {
    const bool gone = refusal == NativeRefusal::out_of_reach;
    if (gone && terms_.module_required) {
      return giveUp(std::make_exception_ptr(redisError<ReplyError>(
          endpoint,
          ": the server does not have the swl-native module, or this ACL user may not run its command, which "
          "ConnectionOptions::native_module requires (load it, docs/operations.md, or allow it, or ask for "
          "use_when_loaded): ",
          reply.text())));
    }
    Next next{Step::resend_as_script, std::nullopt, std::chrono::milliseconds(0), nullptr};
    next.module_gone = gone;
    return next;
  }

  static Next giveUp(std::exception_ptr error) {
    return {Step::give_up, std::nullopt, std::chrono::milliseconds(0), std::move(error)};
  }

  const Script* script_;
  std::string_view described_;
  Terms terms_;
  RetryPacing pacing_;
  bool loaded_ = false;
  int redirects_ = 0;
};

}  // namespace swl::detail
