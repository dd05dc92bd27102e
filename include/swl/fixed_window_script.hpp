#pragma once
// The fixed window as one atomic Lua script: the seed articles' INCR counter per window, kept in one
// hash per key so that a rejected request adds nothing and Redis's clock decides. Runs after the
// shared prelude (detail/script_prelude.hpp), which reads the arguments.

#include <string_view>

namespace swl {

inline constexpr std::string_view kFixedWindowScript = R"lua(
-- KEYS[1] is a hash: s = the current window's start (microseconds, a multiple of the window since the
-- epoch, so every client agrees where windows begin), c = units admitted in it.
local start = idiv(now, window) * window
local state = redis.call('HMGET', key, 's', 'c')
local count = 0
if tonumber(state[1]) == start then count = tonumber(state[2]) end

local allowed = count + cost <= limit
if record and (allowed or count_rejected) then
  count = count + cost
  redis.call('HSET', key, 's', text(start), 'c', text(count))
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
end

local remaining = limit - count
if remaining < 0 then remaining = 0 end
local ends_in = start + window - now
local reset_after = 0
if count > 0 then reset_after = ends_in end
if allowed then return {1, remaining, 0, reset_after} end
-- Any cost up to the limit fits in the next window.
return {0, remaining, ends_in, reset_after}
)lua";

}  // namespace swl
