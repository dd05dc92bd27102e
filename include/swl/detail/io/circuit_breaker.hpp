#pragma once
// CircuitBreaker: one per server, shared by every connection to it, so that a server that does not
// answer holds no request hostage. After a timeout or a failed connect the circuit opens: every call
// fails at once with CircuitOpenError (a ConnectionError, so the limiter's failure policy answers in
// microseconds, without dialling) until the cool-down has passed. Then one call at a time goes through
// as a probe; the first answer closes the circuit, a failed probe opens it for another cool-down.
//
// A cool-down of 0 turns it off: every call may try. Thread-safe; a closed circuit costs one atomic load.
//
// A refused call says why the circuit opened in its type as well as its message: a server that could not
// be reached (a timeout, a refused connect) gives CircuitOpenError; a misconfiguration keeps its own type
// while the circuit is open (AuthError for a refused password, TlsError for a failed TLS handshake), so
// code that catches AuthError to report a wrong password still sees one on the calls that follow.

#include <swl/connection_options.hpp>
#include <swl/error.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace swl::detail {

// Why a circuit opened, which is what the calls it refuses raise.
enum class BreakCause { unreachable, refused_credentials, failed_tls };

inline BreakCause causeOf(const Error& error) noexcept {
  if (dynamic_cast<const AuthError*>(&error) != nullptr) return BreakCause::refused_credentials;
  if (dynamic_cast<const TlsError*>(&error) != nullptr) return BreakCause::failed_tls;
  return BreakCause::unreachable;
}

class CircuitBreaker {
 public:
  using Clock = std::chrono::steady_clock;

  // `probe_patience`: how long a probe may take (a connect and a command) before another may go, so a
  // probe whose thread never reports cannot keep the circuit half open.
  CircuitBreaker(std::chrono::milliseconds cooldown, std::chrono::milliseconds probe_patience)
      : cooldown_(cooldown), probe_patience_(probe_patience) {}

  // Before a call: throws while the circuit is open or another call is probing (CircuitOpenError, or the
  // AuthError or TlsError that opened it); once the cool-down has passed, this call becomes the probe.
  // `now` is the caller's time, for tests that move it by hand.
  void admit(const std::string& endpoint, Clock::time_point now = Clock::now()) {
    if (state_.load(std::memory_order_acquire) == kClosed) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ == kClosed) return;
    // Open and cooled down, or a probe that never reported: this call probes.
    if (now >= reopen_at_) {
      state_ = kProbing;
      reopen_at_ = now + probe_patience_;
      return;
    }
    throwRefusal(endpoint, now);
  }

  // admit() without becoming the probe: for a client that would rather not wait for a connection (a
  // pool's borrow) when the call would be refused anyway.
  void refuseWhileOpen(const std::string& endpoint, Clock::time_point now = Clock::now()) {
    if (state_.load(std::memory_order_acquire) == kClosed) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ != kClosed && now < reopen_at_) throwRefusal(endpoint, now);
  }

  // The server answered (an error reply is an answer too): the circuit closes.
  void recordSuccess() noexcept {
    if (state_.load(std::memory_order_acquire) == kClosed) return;
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = kClosed;
  }

  // A timeout, a failed connect or a refused handshake: the circuit opens for a cool-down.
  void recordFailure(const std::string& why, BreakCause cause = BreakCause::unreachable,
                     Clock::time_point now = Clock::now()) {
    if (cooldown_.count() == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = kOpen;
    reopen_at_ = now + cooldown_;
    last_failure_ = why;
    last_cause_ = cause;
  }

  bool isOpen() const noexcept { return state_.load(std::memory_order_acquire) != kClosed; }

 private:
  static constexpr int kClosed = 0, kOpen = 1, kProbing = 2;

  [[noreturn]] void throwRefusal(const std::string& endpoint, Clock::time_point now) const {
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(reopen_at_ - now).count();
    std::string why = aboutRedis(endpoint, " is not asked for another ", std::to_string(wait),
                                 " ms: its circuit is open after: ", last_failure_);
    switch (last_cause_) {
      case BreakCause::refused_credentials:
        throw AuthError(std::move(why));
      case BreakCause::failed_tls:
        throw TlsError(std::move(why));
      case BreakCause::unreachable:
        break;
    }
    throw CircuitOpenError(std::move(why));
  }

  std::chrono::milliseconds cooldown_;
  std::chrono::milliseconds probe_patience_;
  std::atomic<int> state_{kClosed};
  std::mutex mutex_;
  Clock::time_point reopen_at_{};
  std::string last_failure_;
  BreakCause last_cause_ = BreakCause::unreachable;
};

// A breaker for one server, as `options` want it; connections to one server share it.
inline std::shared_ptr<CircuitBreaker> breakerFor(const ConnectionOptions& options) {
  return std::make_shared<CircuitBreaker>(options.breaker_cooldown,
                                          options.connect_timeout + options.command_timeout + options.command_timeout);
}

}  // namespace swl::detail
