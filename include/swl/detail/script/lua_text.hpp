#pragma once
// Every script's Lua is written as R"lua(...)lua"sv. The literal then carries its length; a plain
// R"lua(...)lua" turned into a string_view has the compiler count its characters one by one at compile
// time: about 110 KB of Lua, 0.2 s of every file that includes swl (bench/compile_time.sh).

#include <string_view>

namespace swl {

using std::string_view_literals::operator""sv;

}  // namespace swl
