#!/usr/bin/env bash
# Where one request's time goes at one request in flight (C=1): swl sync (the script, and swl-native where
# the module builds), a bare hiredis loop sending the same EVALSHA, the peers of bench/peers.sh (where
# ../shared/bench is), and a PING, on one private redis-server, in rounds whose order turns. Per contender:
# decisions/s, client CPU, Redis CPU (commandstats and /proc), the rest (waiting), and system calls per
# decision (strace -c). bench/one_in_flight.py says how each is read.
#
#   bash bench/one_in_flight.sh [requests=40000] [rounds=3]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
requests=${1:-40000}
rounds=${2:-3}

build_swl_bench
install_missing strace
command -v node >/dev/null && command -v npm >/dev/null || install_missing nodejs npm
peers=()
if [ -f ../shared/bench/peers.js ]; then
  mkdir -p build-bench/peers
  cp ../shared/bench/package.json ../shared/bench/peers.js build-bench/peers/
  (cd build-bench/peers && npm install --no-audit --no-fund --silent >/dev/null 2>&1) || {
    echo "bench/one_in_flight.sh: npm install of the peers failed" >&2
    exit 2
  }
  peers=(--peers build-bench/peers)
else
  echo "bench/one_in_flight.sh: ../shared/bench is not here (a clone): swl and the bare loop only" >&2
fi
"$SWL_BENCH" --print-script >build-bench/swl.lua

workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
module=()
native=()
if [ -n "$SWL_NATIVE_MODULE" ]; then
  module=(--loadmodule "$SWL_NATIVE_MODULE")
  native=(--native)
fi
start_private_redis "$workdir" "${module[@]}"
python3 bench/one_in_flight.py --port "$REDIS_PORT" --redis-pid "$REDIS_PID" --bench "$SWL_BENCH" \
  --script "$PWD/build-bench/swl.lua" --requests "$requests" --rounds "$rounds" "${peers[@]}" "${native[@]}"
