#pragma once
// The decision of a count per period, in Lua: the fixed window's (a period per window, from the epoch)
// and the periodic quota's (periods the client computes, calendar days say) are the same decision over
// different periods, made here once.

#include <swl/detail/script/lua_text.hpp>

#include <string_view>

namespace swl::detail {

// Defines decideByCount, after a prelude that defines `cost`, `limit`, `record` and `count_rejected`.
inline constexpr std::string_view kPeriodCount = R"lua(
-- A request is admitted iff the `count` units admitted in the current period, which ends `ends_in` from
-- now, plus its cost fit the limit. Returns the answer, and the count to save when the request counts
-- (nil otherwise). A refusal waits until the period ends: any cost up to the limit fits in the next one.
local function decideByCount(count, ends_in)
  local allowed = count + cost <= limit
  local counted = nil
  if record and (allowed or count_rejected) then
    count = count + cost
    counted = count
  end
  local remaining = limit - count  -- below 0 when counted refusals filled the period past the limit
  local reset_after = 0
  if count > 0 then reset_after = ends_in end
  if allowed then return {1, remaining, 0, reset_after}, counted end
  return {0, remaining, ends_in, reset_after}, counted
end
)lua"sv;

}  // namespace swl::detail
