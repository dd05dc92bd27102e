// The module's sums (module/log/sums.hpp) beside the Lua's own part (SlidingWindowLog::kParts), run inside
// liblua5.1 on the same operations: adds, settles (changes to 0, to fewer units, to more), trims and both
// searches, from sets that start just below every level's roll-over. After every operation the two
// bookkeeping members must be the same bytes, the two node stores the same nodes, and every search the
// same entry. Also: the module's names (bookkeeping, nodes, entries, units) are the Lua's.

#include <catch2/catch.hpp>

#include "../module/log/layout.hpp"
#include "../module/log/sums.hpp"
#include "support/wanted.hpp"

#include <swl/algorithms/sliding_window_log.hpp>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
}

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace native = swl::native;

// struct.pack and struct.unpack for the big-endian doubles the sums use ('>d...'), as Redis's Lua has them.
int structPack(lua_State* lua) {
  const std::string format = luaL_checkstring(lua, 1);
  std::string packed;
  for (std::size_t i = 1; i < format.size(); ++i) {
    native::appendDouble(packed, luaL_checknumber(lua, static_cast<int>(i) + 1));
  }
  lua_pushlstring(lua, packed.data(), packed.size());
  return 1;
}
int structUnpack(lua_State* lua) {
  const std::string format = luaL_checkstring(lua, 1);
  std::size_t length = 0;
  const char* text = luaL_checklstring(lua, 2, &length);
  auto at = static_cast<std::size_t>(luaL_optinteger(lua, 3, 1)) - 1;
  const std::size_t doubles = format.size() - 1;
  luaL_argcheck(lua, at + 8 * doubles <= length, 2, "too short");
  for (std::size_t i = 0; i < doubles; ++i, at += 8) lua_pushnumber(lua, native::readDouble({text, length}, at));
  lua_pushinteger(lua, static_cast<lua_Integer>(at + 1));
  return static_cast<int>(doubles) + 1;
}

// The Lua side: kLayout and kParts as swl sends them, then a driver over a model `io` (nodes in a table,
// entries by number) that the C++ side keeps alike.
constexpr const char* kDriver = R"lua(
local sums = logSums(struct.pack, struct.unpack)
local searches = logSearches(sums)
local book, store, entries = nil, nil, nil
local io = {}
function io:nodes(level, first, last)
  local found = {}
  for index = first, last do found[#found + 1] = store[level][index] or 0 end
  return found
end
function io:entries(first, last)
  local found = {}
  for number = first, last do found[#found + 1] = entries[number] end
  return found
end
function io:writeNode(level, index, sum, was)
  assert((store[level][index] or 0) == (was or 0), 'writeNode was a stale sum')
  if sum == 0 then store[level][index] = nil else store[level][index] = sum end
end
function io:dropNodes(level, first, last)
  for index = first, last do store[level][index] = nil end
end
function start(count)
  book, store, entries = sums.fresh(count), {{}, {}, {}, {}}, {}
  for number = 0, count - 1 do entries[number] = 1 end
end
function add(units) entries[book.next] = units; sums.add(book, io, units) end
function change(number, delta) entries[number] = entries[number] + delta; sums.change(book, io, number, delta) end
function trim(count)
  local units = {}
  for i = 1, count do units[i] = entries[book.oldest + i - 1]; entries[book.oldest + i - 1] = nil end
  sums.trim(book, io, units)
end
function unitsBefore(number) return searches.unitsBefore(book, io, number) end
function entryOfUnit(target)
  local number, before = searches.entryOfUnit(book, io, target)
  return number or -1, before or -1
end
function state()
  local nodes = {}
  for level = 1, 4 do
    local indexes = {}
    for index in pairs(store[level]) do indexes[#indexes + 1] = index end
    table.sort(indexes)
    for _, index in ipairs(indexes) do nodes[#nodes + 1] = string.format('%d:%.0f=%.0f', level, index, store[level][index]) end
  end
  return sums.encode(book), table.concat(nodes, ' ')
end
function nodeName(level, sum, index) return '#' .. string.char(level) .. struct.pack('>dd', sum, index) end
function entryName(units, member) return '*' .. struct.pack('>d', units) .. member end
)lua";

class LuaSums {
 public:
  LuaSums() : lua_(luaL_newstate(), &lua_close) {
    luaL_openlibs(lua_.get());
    lua_newtable(lua_.get());
    lua_pushcfunction(lua_.get(), structPack);
    lua_setfield(lua_.get(), -2, "pack");
    lua_pushcfunction(lua_.get(), structUnpack);
    lua_setfield(lua_.get(), -2, "unpack");
    lua_setglobal(lua_.get(), "struct");
    // The part's functions are locals of its chunk: the driver runs in the same chunk to reach them.
    const std::string chunk = swl::detail::wholePart(swl::SlidingWindowLog::kLayout) +
                              swl::detail::wholePart(swl::SlidingWindowLog::kParts) + kDriver;
    if (luaL_loadbuffer(lua_.get(), chunk.data(), chunk.size(), "sums") != 0 || lua_pcall(lua_.get(), 0, 0, 0) != 0) {
      FAIL("the Lua sums did not load: " << lua_tostring(lua_.get(), -1));
    }
  }

  // Calls global `name` with integer arguments; returns its results as texts (numbers formatted whole).
  std::vector<std::string> call(const char* name, std::initializer_list<std::int64_t> arguments) {
    lua_State* lua = lua_.get();
    const int top = lua_gettop(lua);
    lua_getglobal(lua, name);
    for (const std::int64_t argument : arguments) lua_pushnumber(lua, static_cast<lua_Number>(argument));
    if (lua_pcall(lua, static_cast<int>(arguments.size()), LUA_MULTRET, 0) != 0) {
      const std::string error = lua_tostring(lua, -1);
      lua_settop(lua, top);
      FAIL("Lua " << name << " failed: " << error);
    }
    std::vector<std::string> results;
    for (int i = top + 1; i <= lua_gettop(lua); ++i) {
      if (lua_type(lua, i) == LUA_TNUMBER) {
        results.push_back(std::to_string(static_cast<std::int64_t>(lua_tonumber(lua, i))));
      } else {
        std::size_t length = 0;
        const char* text = lua_tolstring(lua, i, &length);
        results.emplace_back(text, length);
      }
    }
    lua_settop(lua, top);
    return results;
  }

  std::string entryName(std::int64_t units, const std::string& member) {
    lua_State* lua = lua_.get();
    lua_getglobal(lua, "entryName");
    lua_pushnumber(lua, static_cast<lua_Number>(units));
    lua_pushlstring(lua, member.data(), member.size());
    REQUIRE(lua_pcall(lua, 2, 1, 0) == 0);
    std::size_t length = 0;
    const char* text = lua_tolstring(lua, -1, &length);
    std::string name(text, length);
    lua_pop(lua, 1);
    return name;
  }

 private:
  std::unique_ptr<lua_State, decltype(&lua_close)> lua_;
};

// The C++ side: the same model io.
struct ModelIo {
  std::array<std::map<std::int64_t, std::int64_t>, native::kLevels> store;
  std::map<std::int64_t, std::int64_t> units_of;  // each entry in the set, by number

  std::vector<std::int64_t> nodes(int level, std::int64_t first, std::int64_t last) const {
    std::vector<std::int64_t> found;
    for (std::int64_t index = first; index <= last; ++index) {
      const auto at = store[level - 1].find(index);
      found.push_back(at == store[level - 1].end() ? 0 : at->second);
    }
    return found;
  }
  std::vector<std::int64_t> entries(std::int64_t first, std::int64_t last) const {
    std::vector<std::int64_t> found;
    for (std::int64_t number = first; number <= last; ++number) found.push_back(units_of.at(number));
    return found;
  }
  void writeNode(int level, std::int64_t index, std::int64_t sum, std::optional<std::int64_t> was) {
    const auto at = store[level - 1].find(index);
    REQUIRE((at == store[level - 1].end() ? 0 : at->second) == was.value_or(0));
    if (sum == 0) {
      store[level - 1].erase(index);
    } else {
      store[level - 1][index] = sum;
    }
  }
  void dropNodes(int level, std::int64_t first, std::int64_t last) {
    for (std::int64_t index = first; index <= last; ++index) store[level - 1].erase(index);
  }
  std::string state() const {
    std::ostringstream nodes;
    bool first = true;
    for (int level = 1; level <= native::kLevels; ++level) {
      for (const auto& [index, sum] : store[level - 1]) {
        nodes << (first ? "" : " ") << level << ':' << index << '=' << sum;
        first = false;
      }
    }
    return nodes.str();
  }
};

}  // namespace

TEST_CASE("the module's names are the Lua's: bookkeeping, nodes, entries that carry their units") {
  LuaSums lua;
  for (const auto& node : std::vector<std::array<std::int64_t, 3>>{
           {1, 3, 0}, {2, -5, 7}, {3, 65536, 123456}, {4, 1, (std::int64_t{1} << 40) + 3}}) {
    CHECK(native::nodeName(static_cast<int>(node[0]), node[1], node[2]) ==
          lua.call("nodeName", {node[0], node[1], node[2]})[0]);
  }
  CHECK(native::unitsEntryName(4000, "member-1") == lua.entryName(4000, "member-1"));
  CHECK(native::unitsEntryName(0, "") == lua.entryName(0, ""));
  CHECK(native::unitsOf(native::unitsEntryName(4000, "m")) == 4000);
  CHECK(native::unitsOf("a*12") == 12);
  CHECK(native::unitsOf("a=7") == 7);
  CHECK(native::unitsOf("a*1*2") == 2);
  CHECK(native::unitsOf("a*1x") == 1);
  CHECK(native::unitsOf("1700000000000") == 1);
  native::Book book = native::Book::fresh(70000);
  book.extra = -3;
  book.last_unit = -1;
  book.horizon = 1700000000123456;
  book.tail = {1, -2, 3, 4};
  book.gone = {5, 6, -7, 8};
  const std::optional<native::Book> decoded = native::bookkeepingOf(native::bookkeepingName(book));
  REQUIRE(decoded);
  CHECK(*decoded == book);
  CHECK_FALSE(native::bookkeepingOf("#"));
}

TEST_CASE("the module's sums keep the Lua's bookkeeping, nodes and searches on random operations") {
  LuaSums lua;
  std::mt19937_64 random(20261128);
  const auto between = [&random](std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(random);
  };
  // How often each boundary was met: a level's node closed by an add, a trim that left a node behind,
  // a settle of a closed node (stored) rather than an open one, and the searches.
  std::array<std::int64_t, native::kLevels> closed{}, left_behind{};
  std::int64_t settles_of_closed = 0, searches_through_nodes = 0, searches = 0, operations = 0, traces = 0;
  const std::int64_t wanted = swl::test::wanted("SWL_MODULE_SUMS_OPERATIONS", 200000);
  const std::int64_t starts[] = {0, 1, 13, 250, 4090, 65530};
  while (operations < wanted) {
    ++traces;
    const std::int64_t count = starts[between(0, 5)] + between(0, 3);
    lua.call("start", {count});
    native::Book book = native::Book::fresh(count);
    ModelIo io;
    for (std::int64_t number = 0; number < count; ++number) io.units_of.emplace_hint(io.units_of.end(), number, 1);
    const std::int64_t steps = between(200, 3000);
    for (std::int64_t step = 0; step < steps && operations < wanted; ++step, ++operations) {
      const std::int64_t kind = between(0, 99);
      const std::int64_t in_set = book.next - book.oldest;
      std::string what;
      if (kind < 50 || in_set == 0) {
        const std::int64_t pick = between(0, 99);
        const std::int64_t units = pick < 50 ? 1 : pick < 55 ? 0 : pick < 90 ? between(2, 20) : between(1000, 100000);
        for (int level = 0; level < native::kLevels; ++level) {
          if (book.next > 0 && book.next % native::kNodeSize[level] == 0) ++closed[level];
        }
        io.units_of[book.next] = units;
        native::addEntry(book, io, units);
        lua.call("add", {units});
        what = "add " + std::to_string(units);
      } else if (kind < 60) {
        const std::int64_t number = between(book.oldest, book.next - 1);
        const std::int64_t units = io.units_of.at(number);
        const std::int64_t pick = between(0, 2);
        const std::int64_t delta = pick == 0 ? -units : pick == 1 ? -between(0, units) : between(1, 5000);
        if (native::floorDiv(number, 16) != native::floorDiv(book.next - 1, 16)) ++settles_of_closed;
        io.units_of[number] += delta;
        native::changeEntry(book, io, number, delta);
        lua.call("change", {number, delta});
        what = "change " + std::to_string(number) + " by " + std::to_string(delta);
      } else if (kind < 75) {
        // Mostly a call's few, sometimes many; a trace's first trim may leave only the newest few of a set
        // that started just below a roll-over, so that its next trims pass it.
        std::int64_t leaving = std::min(in_set, between(0, 9) == 0 ? between(1, 300) : between(1, 8));
        if (step < 3 && in_set > 20) leaving = in_set - between(1, 12);
        std::vector<std::int64_t> units;
        for (std::int64_t i = 0; i < leaving; ++i) {
          units.push_back(io.units_of.at(book.oldest + i));
          io.units_of.erase(book.oldest + i);
        }
        for (int level = 0; level < native::kLevels; ++level) {
          const std::int64_t size = native::kNodeSize[level];
          if (native::floorDiv(book.oldest + leaving, size) > native::floorDiv(book.oldest, size)) ++left_behind[level];
        }
        native::trimEntries(book, io, units);
        lua.call("trim", {leaving});
        what = "trim " + std::to_string(leaving);
      } else if (kind < 85) {
        const std::int64_t number = between(book.oldest, book.next);
        ++searches;
        if (native::searches::spanLevel(book.oldest, number - 1) > 0) ++searches_through_nodes;
        const std::int64_t units = native::searches::unitsBefore(book, io, number);
        REQUIRE(std::to_string(units) == lua.call("unitsBefore", {number})[0]);
        what = "unitsBefore " + std::to_string(number);
      } else if (book.total() > 0) {
        const std::int64_t target = between(1, book.total());
        ++searches;
        if (native::searches::spanLevel(book.oldest, book.next - 1) > 0) ++searches_through_nodes;
        const auto found = native::searches::entryOfUnit(book, io, target);
        const std::vector<std::string> expected = lua.call("entryOfUnit", {target});
        INFO("entryOfUnit " << target << " of " << book.total());
        REQUIRE(std::to_string(found ? found->number : -1) == expected[0]);
        REQUIRE(std::to_string(found ? found->before : -1) == expected[1]);
        what = "entryOfUnit";
      }
      const std::vector<std::string> state = lua.call("state", {});
      INFO("trace " << traces << ", step " << step << ": " << what);
      REQUIRE(native::bookkeepingName(book) == state[0]);
      REQUIRE(io.state() == state[1]);
    }
  }
  std::printf(
      "module sums vs Lua: %lld operations in %lld traces; nodes closed per level %lld %lld %lld %lld; trims past "
      "a node per level %lld %lld %lld %lld; settles of a closed node %lld; searches %lld (%lld through nodes)\n",
      static_cast<long long>(operations), static_cast<long long>(traces), static_cast<long long>(closed[0]),
      static_cast<long long>(closed[1]), static_cast<long long>(closed[2]), static_cast<long long>(closed[3]),
      static_cast<long long>(left_behind[0]), static_cast<long long>(left_behind[1]),
      static_cast<long long>(left_behind[2]), static_cast<long long>(left_behind[3]),
      static_cast<long long>(settles_of_closed), static_cast<long long>(searches),
      static_cast<long long>(searches_through_nodes));
  for (int level = 0; level < native::kLevels; ++level) {
    CHECK(closed[level] > 0);
    CHECK(left_behind[level] > 0);
  }
}
