#!/usr/bin/env bash
# The path one warm SlidingWindowLimiter<>::tryAcquire takes to hiredis's redisCommandArgv, counted from
# a trace instead of by hand: prints the functions in call order, indented by depth, then how many
# functions and files (issue 37's figure), the stack at redisCommandArgv, and any call that climbs back.
# bench/call_path.py says what counts.
#
#   bash bench/call_path.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
install_missing g++ libhiredis-dev libssl-dev redis-server redis-tools binutils python3
work=$PWD/build-call-path
mkdir -p "$work"
g++ -std=c++17 -O0 -g -no-pie -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include \
  -Iinclude bench/call_path.cpp -o "$work/call_path" -Wl,--wrap=redisCommandArgv \
  $(pkg-config --libs hiredis) -lpthread
trap stop_private_redis EXIT
start_private_redis "$work"
"$work/call_path" "$REDIS_PORT" >"$work/trace"
python3 bench/call_path.py "$work/call_path" "$work/trace" include
