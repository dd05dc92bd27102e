#pragma once
// The log's check: one key's log recomputed from its entries (SlidingWindowLog::kCheckScript).

#include <swl/detail/script/lua_text.hpp>
#include <swl/detail/script/wire.hpp>

#include <string_view>

namespace swl::detail::sliding_window_log {

// After the prelude and the log's functions. Its work grows with the set, as it must: never a decision's.
inline constexpr std::string_view kCheck = R"lua(
local counted = countedByUnits()
local unitsOf, NODE_BAND, LEVELS = counted.unitsOf, counted.NODE_BAND, counted.sums.LEVELS
local members = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
local function bad(what) return redis.error_reply('swl: the log ' .. key .. ' ' .. what) end
local books, marks, names, times, nodes = {}, {}, {}, {}, {}
for level = 1, LEVELS do nodes[level] = {} end
for i = 1, #members, 2 do
  local member, score = members[i], tonumber(members[i + 1])
  if score < 0 then books[#books + 1] = member
  elseif score == 0 then marks[#marks + 1] = member
  elseif score < NODE_BAND[1] then names[#names + 1], times[#times + 1] = member, score
  else
    local level = string.byte(member, 2)
    if string.byte(member) ~= BOOKKEEPING_BYTE or #member ~= NODE_BYTES or level < 1 or level > LEVELS then return bad('holds a sum of another layout: ' .. member) end
    local sum, index = struct.unpack('>dd', member, 3)
    if score ~= NODE_BAND[level] + 2 * index then return bad('holds node ' .. index .. ' of level ' .. level .. ' at score ' .. text(score)) end
    nodes[level][index] = sum
  end
end
for i = 2, #times do
  if times[i] <= times[i - 1] then return bad('holds two entries out of time order at ' .. text(times[i])) end
end
if #books == 0 then
  for level = 1, LEVELS do
    if next(nodes[level]) then return bad('is counted by entries but holds sums') end
  end
  if #marks > 1 then return bad('holds ' .. #marks .. ' marks') end
  if #marks == 1 and string.byte(marks[1]) ~= MARK_BYTE then return bad('holds ' .. marks[1] .. ' at score 0') end
  for _, member in ipairs(names) do
    if unitsOf(member) ~= 1 then return bad('is counted by entries but holds ' .. member) end
  end
  return {'entries', #names, #names, 0, 0, 0, 0}
end
if #books > 1 then return bad('holds ' .. #books .. ' bookkeeping members') end
if #marks > 0 then return bad('is counted by units but holds a mark') end
local log_sums = counted.sums
local book = log_sums.decode(books[1])
if not book then return bad('holds a bookkeeping member of another layout') end
if book.next - book.oldest ~= #names then
  return bad('holds ' .. #names .. ' entries; its bookkeeping numbers ' .. text(book.oldest) .. '..' .. text(book.next - 1))
end
if #names > 0 and book.newest ~= times[#times] then return bad('says its newest entry is at ' .. text(book.newest) .. ', not ' .. text(times[#times])) end
local units, extra, last_unit = {}, 0, nil
for i, member in ipairs(names) do
  units[i] = unitsOf(member)
  extra = extra + units[i] - 1
  if units[i] > 0 then last_unit = times[i] end
end
if extra ~= book.extra then return bad('holds ' .. text(extra) .. ' extra units; its bookkeeping says ' .. text(book.extra)) end
if last_unit and book.last_unit ~= -1 and book.last_unit ~= last_unit then
  return bad('says its newest unit is at ' .. text(book.last_unit) .. ', not ' .. text(last_unit))
end
local counts = {}
for level = 1, LEVELS do
  local size = log_sums.SIZE[level]
  local oldest_node, open = math.floor(book.oldest / size), math.floor((book.next - 1) / size)
  -- Each node's sum over the entries still in the set, recomputed.
  local present = {}
  for i = 1, #names do
    local index = math.floor((book.oldest + i - 1) / size)
    present[index] = (present[index] or 0) + units[i] - 1
  end
  counts[level] = 0
  for index, sum in pairs(nodes[level]) do
    counts[level] = counts[level] + 1
    if index < oldest_node or index >= open then return bad('stores node ' .. index .. ' of level ' .. level .. ' outside ' .. oldest_node .. '..' .. (open - 1)) end
  end
  for index = oldest_node, math.max(oldest_node, open) do
    local kept = index == open and book.tail[level] or nodes[level][index] or 0
    if index == oldest_node then kept = kept - book.gone[level] end
    if #names > 0 and kept ~= (present[index] or 0) then
      return bad('node ' .. index .. ' of level ' .. level .. ' sums ' .. text(kept) .. ' over its entries in the set; they hold ' .. text(present[index] or 0))
    end
  end
end
return {'units', #names, #names + extra, counts[1], counts[2], counts[3], counts[4]}
)lua"sv;

}  // namespace swl::detail::sliding_window_log
