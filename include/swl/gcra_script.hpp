#pragma once
// GCRA, the generic cell rate algorithm (what redis-cell and redis_rate run), as one atomic Lua script:
// a token bucket held as a single time per key. Runs after the shared prelude
// (detail/script_prelude.hpp), which reads the arguments.

#include <string_view>

namespace swl {

inline constexpr std::string_view kGcraScript = R"lua(
-- KEYS[1] is a string "tat frac": the theoretical arrival time, tat + frac/limit microseconds. Each
-- unit admitted moves it window/limit later (the emission interval); a request is admitted while it
-- stays at most one window ahead of now, so a full burst of `limit` fits at once and then units come
-- back evenly. frac keeps the interval exact when the window does not divide by the limit (the
-- limiter checks that limit * window < 2^53).
local tat, frac = now, 0
local stored = redis.call('GET', key)
if stored then
  local t, f = string.match(stored, '^(%d+) (%d+)$')
  t, f = tonumber(t), tonumber(f)
  if t and (t > now or (t == now and f > 0)) then tat, frac = t, f end
end

local moved = frac + cost * window
local new_tat = tat + idiv(moved, limit)
local new_frac = moved - idiv(moved, limit) * limit
local allowed = new_tat < now + window or (new_tat == now + window and new_frac == 0)
if record and (allowed or count_rejected) then
  tat, frac = new_tat, new_frac
  redis.call('SET', key, text(tat) .. ' ' .. text(frac), 'PX', math.ceil((tat - now) / 1000) + 1)
end

-- A time with a fraction of a microsecond left, rounded up: waiting less would not be enough.
local function ceiling(at, fraction)
  if fraction > 0 then return at + 1 end
  return at
end
local remaining = idiv((now + window - tat) * limit - frac, window)
if remaining < 0 then remaining = 0 elseif remaining > limit then remaining = limit end
local reset_after = ceiling(tat, frac) - now
if reset_after < 0 then reset_after = 0 end
if allowed then return {1, remaining, 0, reset_after} end
return {0, remaining, ceiling(new_tat, new_frac) - window - now, reset_after}
)lua";

}  // namespace swl
