#!/usr/bin/env bash
# How long a file that includes swl/swl.hpp takes to compile, against one that includes nlohmann/json.hpp
# (a header-only library users know), and against swl at another revision: g++ -std=c++17 -O0 -c, the
# three compiled in turn ROUNDS times in the same run, so that a loaded machine slows them alike. Prints
# each one's median and its ratio to nlohmann/json's.
#
#   bash bench/compile_time.sh [REVISION=0d90a70] [ROUNDS=9]
#
# Seconds on a shared machine move by a fifth from one run to the next. With --instructions it counts
# instead the instructions each compile executes, under valgrind (cachegrind, without its cache model):
# the same figure in every run, at about 30 times the time.
#
#   bash bench/compile_time.sh --instructions [REVISION=0d90a70]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
count_instructions=false
if [ "${1:-}" = --instructions ]; then count_instructions=true; shift; fi
revision=${1:-0d90a70}
rounds=${2:-9}
install_missing g++ libhiredis-dev nlohmann-json3-dev python3
$count_instructions && install_missing valgrind
work=$PWD/build-compile-time
mkdir -p "$work"
if [ ! -d "$work/tree-$revision" ]; then git worktree add --detach "$work/tree-$revision" "$revision" >/dev/null; fi
printf '#include <swl/swl.hpp>\nint main() {}\n' >"$work/swl.cpp"
printf '#include <nlohmann/json.hpp>\nint main() {}\n' >"$work/json.cpp"
# Instructions one compile of $1 executes (the driver and every program it runs), with the include path $2.
instructions() {
  local out=$work/cachegrind
  rm -rf "$out" && mkdir -p "$out"
  valgrind --tool=cachegrind --cache-sim=no --trace-children=yes --cachegrind-out-file="$out/%p" \
    g++ -std=c++17 -O0 ${2:+-I"$2"} -c "$1" -o /dev/null 2>/dev/null
  cat "$out"/* | awk '/^summary:/ { total += $2 } END { printf "%.0f\n", total }'
}
if $count_instructions; then
  { echo "here $(instructions "$work/swl.cpp" "$PWD/include")"
    echo "$revision $(instructions "$work/swl.cpp" "$work/tree-$revision/include")"
    echo "nlohmann/json $(instructions "$work/json.cpp" "")"; } | python3 -c '
import sys
counts = dict(line.split() for line in sys.stdin)
json = int(counts["nlohmann/json"])
print("| includes | instructions (10^9) | / nlohmann/json |")
print("|---|--:|--:|")
for name, count in counts.items():
    print("| %s | %.3f | %.3fx |" % (name if name == "nlohmann/json" else "swl/swl.hpp at " + name, int(count) / 1e9, int(count) / json))
'
  exit 0
fi
# Seconds one compile of $1 takes, with the include path $2.
seconds() {
  local started ended
  started=$(date +%s.%N)
  g++ -std=c++17 -O0 ${2:+-I"$2"} -c "$1" -o /dev/null
  ended=$(date +%s.%N)
  python3 -c "print($ended - $started)"
}
for _ in $(seq "$rounds"); do
  echo "here $(seconds "$work/swl.cpp" "$PWD/include")"
  echo "$revision $(seconds "$work/swl.cpp" "$work/tree-$revision/include")"
  echo "nlohmann/json $(seconds "$work/json.cpp" "")"
done | python3 -c '
import statistics, sys
times = {}
for line in sys.stdin:
    name, seconds = line.split()
    times.setdefault(name, []).append(float(seconds))
json = statistics.median(times["nlohmann/json"])
print("| includes | median seconds | / nlohmann/json |")
print("|---|--:|--:|")
for name, values in times.items():
    median = statistics.median(values)
    print("| %s | %.2f | %.2fx |" % (name if name == "nlohmann/json" else "swl/swl.hpp at " + name, median, median / json))
'
