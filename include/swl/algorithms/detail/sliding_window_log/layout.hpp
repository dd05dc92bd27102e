#pragma once
// The sliding window log's layout, and its busiest paths, which run before anything is defined: the
// first parts of every script of the log (SlidingWindowLog, algorithms/sliding_window_log.hpp).

#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/wire.hpp>

#include <array>
#include <string_view>

namespace swl::detail::sliding_window_log {

// SlidingWindowLog::kLayout (algorithms/sliding_window_log.hpp) says what each part is for: these notes,
// then the layout's numbers and bytes (wire.hpp).
inline constexpr std::string_view kLayoutNotes = R"lua(
-- The sliding window log: one sorted set per limited key, one entry per recorded request.
--   An entry: score = the request's time in microseconds; member = its unique member, as the member
--   policy made it while the set holds one-unit entries only, and in a set counted by units UNITS and
--   its units (a big-endian double: read in one call, as names are read by the thousand), then the
--   member; SETTLED instead of UNITS once settled. (Sets of 0.2 wrote 'member*units' and 'member=units'.)
--   A key's entries are kept in time order: one recorded at or before the newest entry's time (a
--   client's clock behind another's, or stepped back; the end of a lease) is recorded 1 us after it.
--   On Redis's own clock, which moves on between two scripts, that is each request's own time.
-- While every entry holds one unit, the set is "counted by entries": its window's units are its
-- entries (one ZCOUNT), and it holds its mark beside them (score 0): MARK and the window, in
-- microseconds, of the calls that recorded its entries. Once an entry of other units is recorded, or
-- a call brings a window that must remember more than the mark can, it is "counted by units" until it
-- empties: its new entries all carry their units (one too), and it holds its bookkeeping (BOOKKEEPING...)
-- instead of the mark, with sums that keep every count and search bounded (logSums below).
-- The horizon: an entry at or before the start of the window of a call that recorded an entry has
-- left for good, whatever window a later call brings (a widened window does not bring back what a
-- shorter one let go). The bookkeeping stores it; a set counted by entries reads it off its newest
-- entry's time less the window in its mark, or, once an entry was recorded ahead of its call's clock,
-- off the mark itself (HORIZON and the horizon after the window).
-- Entries that slid out are removed a few at a time, by calls that record: no call's work grows with
-- the window, and a refusal or a peek writes nothing.
)lua"sv;
inline constexpr auto kLayoutConstants = wire::luaLayoutConstants();
inline constexpr std::array<std::string_view, 2> kLayout{kLayoutNotes, kLayoutConstants.view()};

// A set counted by entries sheds what slid out (through `through`, a time as text) in the fast path and in
// closeWindow (phases.hpp) alike: this text, written once and placed in both, rather than a Lua function,
// which would be made on every call (bash bench/instructions.sh measured a shared function at 1.2% of a
// cost-1 call's instructions).
inline constexpr std::string_view kTrimSlid = R"lua(
        -- Up to TRIM entries that slid out go, the oldest first (after the mark): they no longer count,
        -- so removing them is only for memory, and each removal costs Redis a command.
        local slid = redis.call('ZCOUNT', key, '(0', through)
        if slid > TRIM then
          redis.call('ZREMRANGEBYRANK', key, 1, TRIM)
        elseif slid > 0 then
          redis.call('ZREMRANGEBYSCORE', key, '(0', through)
        end)lua"sv;

// The fast path: its text up to the trim, the trim, and its rest.
inline constexpr std::string_view kFastPathOpening = R"lua(
local start = text(now - window)
local live = redis.call('ZCOUNT', key, '(' .. start, TIMES_END)
if redis_time then
  local mark = MARK .. ARGV[1]
  -- Only a member of the caller's: a call without one is recorded under its millisecond, which repeats,
  -- and a repeat must not be taken for an admission already recorded where the set counts units.
  if cost == 1 and record and live < limit and ARGV[5] ~= nil and ARGV[5] ~= '' then
    local member = ARGV[5]
    local added = redis.call('ZADD', key, 'NX', now_text, member, 0, mark)
    if added == 2 and redis.call('ZCOUNT', key, '-inf', 0) > 1 then
      redis.call('ZREM', key, mark, member)
    else
      redis.call('PEXPIRE', key, ARGV[6] or math.ceil(window / 1000))
      if now % TRIM_EVERY == 0 then
        local through = start)lua"sv;
inline constexpr std::string_view kFastPathClosing = R"lua(
      end
      return {1, limit - live - (added > 0 and 1 or 0), 0, window}
    end
  elseif (cost == 0 or (live + cost > limit and not count_rejected)) and redis.call('ZSCORE', key, mark) then
    local answer = {1, limit - live, 0, 0}
    if live > 0 then answer[4] = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) + window - now end
    if cost > 0 then
      -- The same cost fits once the (live + cost - limit)-th oldest entry in the window has left:
      -- the (limit - cost + 1)-th newest.
      local rank = cost - limit - 1
      answer[1], answer[3] = 0, tonumber(redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')[2]) + window - now
    end
    return answer
  end
end
)lua"sv;
inline constexpr std::array<std::string_view, 3> kFastPath{kFastPathOpening, kTrimSlid, kFastPathClosing};

}  // namespace swl::detail::sliding_window_log
