#pragma once
// The log's steps, second half: a decision on one key in two phases, and its answer
// (SlidingWindowLog::kFunctions is counted_by_units.hpp, then this).

#include <swl/algorithms/detail/sliding_window_log/layout.hpp>
#include <swl/detail/script/lua_text.hpp>

#include <array>
#include <string_view>

namespace swl::detail::sliding_window_log {

// openWindow, closeWindow and answerOf: up to closeWindow's trim, the trim (layout.hpp), and the rest.
inline constexpr std::string_view kPhasesOpening = R"lua(
-- Phase one: one key's window as this call finds it, for a window of `window` microseconds (sent as
-- `window_text`) ending now, which starts at `start` and holds `live` entries after it: how its set
-- counts, where the window really starts (the horizon may lie later), and the units it holds (held).
openWindow = function(key, window, window_text, start, live, start_text)
  -- The fields a window of a set counted by units takes, named at once (nil ones too) so that its table
  -- is built at its size once instead of growing field by field.
  local w = {key = key, window = window, window_text = window_text, start = start, live = live, held = live,
             quiet = false, book = nil, horizon = nil, slid_read = nil, slid = nil, slid_units = nil, writes = nil}
  local low = redis.call('ZRANGEBYSCORE', key, '-inf', start_text or text(start), 'LIMIT', 0, LOW)
  w.quiet = live == 0 and #low == LOW  -- a window that holds nothing over many entries that slid out
  if low[1] ~= nil and string.byte(low[1]) == BOOKKEEPING_BYTE then
    local units = countedByUnits()
    local book = units.sums.decode(low[1])
    if not book then
      units.changing().renumber(key)
      return openWindow(key, window, window_text, start, live)
    end
    units.open(w, book, low)
    return w
  end
  -- Counted by entries: its marks sort first. The mark says where the horizon lies: MARK and the window
  -- of the call that recorded the newest entry, whose start it is; or, when that entry was recorded
  -- ahead of its call's clock (1 us after the one before), HORIZON and the horizon after them. A set of
  -- 0.3, marked MARK alone, has none: nothing in it has left for good.
  w.mark, w.marks, w.low = MARK .. window_text, {}, {}
  for _, member in ipairs(low) do
    if string.byte(member) == MARK_BYTE and #w.low == 0 then w.marks[#w.marks + 1] = member else w.low[#w.low + 1] = member end
  end
  if w.marks[1] ~= nil and w.marks[1] ~= w.mark then
    local marked_window, horizon = string.match(w.marks[1], '^%' .. MARK .. '(%d+)%' .. HORIZON .. '?(%d*)$')
    if horizon ~= nil and horizon ~= '' then
      w.horizon = tonumber(horizon)
    elseif marked_window ~= nil then
      w.newest = newestTime(key)
      if w.newest > 0 then w.horizon = w.newest - tonumber(marked_window) end
    end
  elseif w.marks[1] ~= nil and not redis_time then
    -- Under the mark's own window, on Redis's clock, the horizon never lies past this window's start.
    w.newest = newestTime(key)
    w.horizon = w.newest - window
  end
  if w.horizon ~= nil and w.horizon > start then
    w.start, w.live = w.horizon, redis.call('ZCOUNT', key, '(' .. text(w.horizon), TIMES_END)
  end
  w.held = w.live
  return w
end

-- Phase two: records `count` units for `member` at `at` (now, or a lease's end), or nothing when `member`
-- is nil (a refusal, a peek), and returns the units the window holds after. A set counted by entries
-- stays so while what it records holds one unit; `by_units` records by units whatever the set (a lease). A
-- window that holds nothing over many entries that slid out (a key hit again after a quiet window) is
-- dropped whole first with UNLINK, which frees a large set in Redis's background thread, so this call's
-- work does not grow with what slid out; its horizon is kept.
local function closeWindow(w, member, count, at, ttl, by_units)
  if not member then return w.held end
  if w.quiet then
    redis.call('UNLINK', w.key)
    w.book, w.mark, w.marks, w.newest, w.quiet = nil, MARK .. w.window_text, {}, 0, false
    w.held, w.live, w.low, w.slid_read = 0, 0, {}, nil
  end
  if w.book or count ~= 1 or by_units then
    if not w.book then countedByUnits().countByUnits(w) end
    units.record(w, member, count, at, ttl)
    return w.held
  end
  local key, recorded = w.key, entryTime(w, at)
  -- The mark this call leaves tells the horizon after it: this window's start, or a later one kept.
  local horizon, mark = now - w.window, w.mark
  if w.horizon ~= nil and w.horizon > horizon then horizon = w.horizon end
  if horizon ~= recorded - w.window then mark = mark .. HORIZON .. text(horizon) end
  local added = redis.call('ZADD', key, 'NX', recorded, member, 0, mark) - 1  -- less the mark, new or not
  if w.marks[1] ~= mark or #w.marks > 1 then
    local stale = {}
    for _, old in ipairs(w.marks) do
      if old == mark then added = added + 1 else stale[#stale + 1] = old end
    end
    if #stale > 0 then redis.call('ZREM', key, unpack(stale)) end
  else
    added = added + 1
  end
  redis.call('PEXPIRE', key, math.max(ttl, math.ceil((recorded + w.window - now) / 1000)))
  -- On one call in TRIM_EVERY, entries that slid out go.
  if now % TRIM_EVERY == 0 then
    local through = text(horizon))lua"sv;
inline constexpr std::string_view kPhasesClosing = R"lua(
  end
  if added > 0 then w.newest = recorded end
  w.held = w.held + added
  return w.held
end

-- The answer {allowed, remaining, retry_after, reset_after} for a request of `cost` that w's window
-- admitted or not (`allowed`), phase two done. A refused request fits once held + cost - limit units
-- have left: the oldest leave first, each at its entry's time + window. The window is empty once the
-- newest entry holding a unit has left.
local function answerOf(w, allowed, cost, limit)
  local retry_after, reset_after = 0, 0
  if not allowed then
    if w.book then
      retry_after = units.searching().freedAfter(w, w.held + cost - limit)
    else
      -- Counted by entries: the (held - needed + 1)-th newest entry, counted from the newest, so that
      -- entries that slid out but are still there do not matter.
      local rank = cost - limit - 1
      retry_after = tonumber(redis.call('ZRANGE', w.key, rank, rank, 'WITHSCORES')[2]) + w.window - now
    end
  end
  if w.held > 0 then
    if w.book then
      local last_unit = w.book.last_unit
      if last_unit < 0 then last_unit = units.lastUnit(w) end
      reset_after = last_unit + w.window - now
    else
      w.newest = w.newest or newestTime(w.key)
      reset_after = w.newest + w.window - now
    end
    if reset_after < 0 then reset_after = 0 end
  end
  -- remaining is below 0 when counted refusals filled the window past the limit
  return {allowed and 1 or 0, limit - w.held, retry_after, reset_after}
end
)lua"sv;
inline constexpr std::array<std::string_view, 3> kPhases{kPhasesOpening, kTrimSlid, kPhasesClosing};

}  // namespace swl::detail::sliding_window_log
