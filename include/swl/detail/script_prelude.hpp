#pragma once
// The opening every counter script (fixed window, sliding counter, GCRA) shares: their arguments, read
// exactly as the sliding window script reads them, and integer helpers. Read it before those scripts.

#include <string_view>

namespace swl::detail {

inline constexpr std::string_view kScriptPrelude = R"lua(
-- KEYS[1]  the key's state
-- ARGV[1]  window in microseconds
-- ARGV[2]  limit: the most units the window admits
-- ARGV[3]  cost: units this request asks for (1 <= cost <= limit); 0 peeks: nothing is recorded
-- ARGV[4]  now in microseconds since the epoch; '' or absent: read Redis's own clock
-- ARGV[5], ARGV[6]  (a member and an expiry: only the sliding window log needs them)
-- ARGV[7]  '1' to record rejected requests too (an opt-in penalty)
-- Returns {allowed 1|0, remaining, retry_after_us, reset_after_us}, integers only.
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local cost = tonumber(ARGV[3] or 1)
local now_text = ARGV[4]
if now_text == nil or now_text == '' then
  local time = redis.call('TIME')
  now_text = time[1] .. string.format('%06d', tonumber(time[2]))
end
local now = tonumber(now_text)
local record = cost > 0
local count_rejected = ARGV[7] == '1'

-- Every value below stays an integer under 2^53, exact in a Lua double; two helpers keep it so.
-- a // b: the quotient of two doubles can round up to the next integer, so it is checked.
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
-- An integer as Redis should store it: Lua would print only 14 significant digits.
local function text(n) return string.format('%.0f', n) end
)lua";

}  // namespace swl::detail
