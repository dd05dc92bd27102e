#pragma once
// What one key's decision takes and gives back: the log's script's ARGV, read (module/log/arguments.hpp
// reads them from a command's words), and its answer.

#include "sums.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace swl::native {

// A decision's arguments (swl/detail/script/wire.hpp names their places).
struct Request {
  std::int64_t window = 0;
  std::string_view window_text;  // as sent: the mark holds it as it came
  std::int64_t limit = 0;
  std::int64_t cost = 1;
  std::int64_t now = 0;
  bool redis_time = true;
  std::string_view member;  // '' for the millisecond timestamp
  std::optional<std::int64_t> ttl;
  bool count_rejected = false;
};

// {allowed, remaining, retry_after_us, reset_after_us}.
struct Answer {
  std::int64_t allowed = 0;
  std::int64_t remaining = 0;
  std::int64_t retry_after = 0;
  std::int64_t reset_after = 0;
};

inline std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return -floorDiv(-a, b); }

}  // namespace swl::native
