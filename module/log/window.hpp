#pragma once
// One key's window as a decision finds it (the Lua's `w`), and what its mark says.

#include "layout.hpp"
#include "set.hpp"
#include "sums.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::native {

struct Window {
  std::int64_t window = 0;
  std::int64_t start = 0;
  std::int64_t live = 0;
  std::int64_t held = 0;
  bool quiet = false;
  std::optional<Book> book;
  std::optional<std::int64_t> horizon;
  // counted by entries
  std::string mark;
  std::vector<std::string> marks;
  std::vector<std::string> low;
  std::optional<std::int64_t> newest;
  // counted by units
  std::vector<std::int64_t> slid_read;
  std::int64_t slid = 0;
  std::int64_t slid_units = 0;
  std::optional<std::int64_t> replaced;
  std::vector<std::pair<std::int64_t, std::string>> writes;
  std::vector<std::string> removals;
  std::vector<std::pair<std::int64_t, std::int64_t>> dropped;
  std::vector<std::string> read;  // the entries the last search read, from number `read_from`
  std::int64_t read_from = 0;

  // Where the window's entries start among the set's ranks: the bookkeeping member, then the `slid`
  // entries at or before `start`. Entries near the window's start are walked to from there, where
  // their ranks deep in a large set would take a ZRANGE.
  RankHint windowStart() const { return {static_cast<double>(start), 1 + slid}; }
};

// A mark's window and horizon: the Lua's string.match(mark, MARK '(%d+)' HORIZON '?(%d*)$').
struct MarkRead {
  std::optional<std::int64_t> window;
  std::optional<std::int64_t> horizon;
};
inline MarkRead readMark(std::string_view mark) {
  std::size_t at = 1;
  const auto digits = [&mark, &at] {
    const std::size_t from = at;
    while (at < mark.size() && mark[at] >= '0' && mark[at] <= '9') ++at;
    return mark.substr(from, at - from);
  };
  const std::string_view window = digits();
  if (window.empty()) return {};
  if (at < mark.size() && mark[at] == wire::kHorizonSeparator) ++at;
  const std::string_view horizon = digits();
  if (at != mark.size()) return {};
  MarkRead read;
  read.window = static_cast<std::int64_t>(std::stod(std::string(window)));
  if (!horizon.empty()) read.horizon = static_cast<std::int64_t>(std::stod(std::string(horizon)));
  return read;
}

// The mark a window of `window_text` microseconds leaves: MARK and the window.
inline std::string markOf(std::string_view window_text) { return std::string(1, kMarkByte).append(window_text); }

}  // namespace swl::native
