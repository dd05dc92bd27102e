#!/usr/bin/env bash
# The client's instructions per warm tryAcquire (swl and hiredis, in the calling process) at this checkout
# and at another revision, counted by callgrind over the same calls to a private redis-server: exact, where
# a timed loop on this 2-core machine moves by more than the difference. Each count is the instructions of
# bench/client_calls.cpp's decideAll() over CALLS calls, divided by CALLS.
#
#   bash bench/client_instructions.sh [REVISION=3910ad5] [CALLS=20000]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
revision=${1:-3910ad5}
calls=${2:-20000}
install_missing g++ pkg-config libhiredis-dev libssl-dev redis-server valgrind
work=$PWD/build-client-instructions
mkdir -p "$work/tree-$revision"
git archive "$revision" include | tar -x -C "$work/tree-$revision"
build() {  # build INCLUDE_DIR OUTPUT
  g++ -std=c++17 -O2 -DNDEBUG -I"$1" bench/client_calls.cpp -o "$2" $(pkg-config --libs hiredis) -lpthread
}
build include "$work/here"
build "$work/tree-$revision/include" "$work/$revision"
trap stop_private_redis EXIT
start_private_redis "$work"
count() {  # count BINARY: instructions per call in decideAll
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" --toggle-collect='*decideAll*' \
    "$1" "$REDIS_PORT" "$calls" >/dev/null 2>"$work/valgrind.log"
  local total
  total=$(grep -m1 '^summary:' "$work/callgrind.out" | awk '{print $2}')
  python3 -c "print(round($total / $calls))"
}
before=$(count "$work/$revision")
now=$(count "$work/here")
echo "| client instructions per warm tryAcquire | $revision | here | here / $revision |"
echo "|---|--:|--:|--:|"
echo "| SlidingWindowLimiter<>, $calls calls | $before | $now | $(python3 -c "print('%.3f' % ($now / $before))") |"
