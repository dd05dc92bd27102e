#pragma once
// The sliding window log's layout, and its busiest paths, which run before anything is defined: the
// first parts of every script of the log (SlidingWindowLog, algorithms/sliding_window_log.hpp).

#include <swl/detail/script/lua_text.hpp>

#include <string_view>

namespace swl::detail::sliding_window_log {

// SlidingWindowLog::kLayout (algorithms/sliding_window_log.hpp) says what each part is for.
inline constexpr std::string_view kLayout = R"lua(
-- The sliding window log: one sorted set per limited key, one entry per recorded request.
--   An entry: score = the request's time in microseconds; member = its unique member, as the member
--   policy made it while the set holds one-unit entries only, and in a set counted by units '*' and
--   its units (a big-endian double: read in one call, as names are read by the thousand), then the
--   member; '+' instead of '*' once settled. (Sets of 0.2 wrote 'member*units' and 'member=units'.)
--   A key's entries are kept in time order: one recorded at or before the newest entry's time (a
--   client's clock behind another's, or stepped back; the end of a lease) is recorded 1 us after it.
--   On Redis's own clock, which moves on between two scripts, that is each request's own time.
-- While every entry holds one unit, the set is "counted by entries": its window's units are its
-- entries (one ZCOUNT), and it holds its mark beside them (score 0): '!' and the window, in
-- microseconds, of the calls that recorded its entries. Once an entry of other units is recorded, or
-- a call brings a window that must remember more than the mark can, it is "counted by units" until it
-- empties: its new entries all carry their units (one too), and it holds its bookkeeping ('#...')
-- instead of the mark, with sums that keep every count and search bounded (logSums below).
-- The horizon: an entry at or before the start of the window of a call that recorded an entry has
-- left for good, whatever window a later call brings (a widened window does not bring back what a
-- shorter one let go). The bookkeeping stores it; a set counted by entries reads it off its newest
-- entry's time less the window in its mark, or, once an entry was recorded ahead of its call's clock,
-- off the mark itself ('@' and the horizon after the window).
-- Entries that slid out are removed a few at a time, by calls that record: no call's work grows with
-- the window, and a refusal or a peek writes nothing.
local TIMES_END = '(9007199254740992'  -- every entry's time lies below 2^53; sums lie outside
local TRIM, TRIM_EVERY = 16, 8         -- counted by entries: at most TRIM, on one call in TRIM_EVERY
local UNITS_TRIM = 8                   -- counted by units: at most UNITS_TRIM, on every call that records
local LOW = UNITS_TRIM + 3             -- members read at or below a window's start: marks, then entries
-- A member's first byte says what it is: a mark ('!'), bookkeeping or a sum ('#'), an entry that carries
-- its units ('*'), or one that carries them settled ('+').
local MARK_BYTE, BOOKKEEPING_BYTE, UNITS_BYTE, SETTLED_BYTE = 33, 35, 42, 43
)lua"sv;

// The fast path trims slid-out entries as closeWindow (phases.hpp) does, written again here on purpose:
// it runs before any function is defined, and a trim shared as a Lua function would be made on every
// call. Measured (bash bench/instructions.sh): a shared function cost a cost-1 call 1.2% of Redis's
// instructions, one made on the trimming calls alone 0.5%.
inline constexpr std::string_view kFastPath = R"lua(
local start = text(now - window)
local live = redis.call('ZCOUNT', key, '(' .. start, TIMES_END)
if redis_time then
  local mark = '!' .. ARGV[1]
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
        -- Up to TRIM entries that slid out go, the oldest first (after the mark).
        local slid = redis.call('ZCOUNT', key, '(0', start)
        if slid > TRIM then
          redis.call('ZREMRANGEBYRANK', key, 1, TRIM)
        elseif slid > 0 then
          redis.call('ZREMRANGEBYSCORE', key, '(0', start)
        end
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

}  // namespace swl::detail::sliding_window_log
