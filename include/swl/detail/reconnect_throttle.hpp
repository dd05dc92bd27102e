#pragma once
// After a failed connect, calls fail at once with that connect's error until the reconnect interval
// has passed, so a dead Redis is not dialled on every request. Shared by the blocking and async
// connections.

#include <swl/error.hpp>

#include <chrono>
#include <string>

namespace swl::detail {

class ReconnectThrottle {
 public:
  explicit ReconnectThrottle(std::chrono::milliseconds interval) : interval_(interval) {}

  // Throws ConnectionError while a failed connect is too recent to try again.
  void check(const std::string& endpoint) const {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_attempt_) return;
    throw ConnectionError("redis at " + endpoint + " is unreachable (" + last_error_ + "); not retrying for another " +
                          std::to_string(std::chrono::ceil<std::chrono::milliseconds>(next_attempt_ - now).count()) +
                          " ms");
  }

  void failed(std::string error) {
    last_error_ = std::move(error);
    next_attempt_ = std::chrono::steady_clock::now() + interval_;
  }

  const std::string& lastError() const noexcept { return last_error_; }

 private:
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point next_attempt_{};
  std::string last_error_;
};

}  // namespace swl::detail
