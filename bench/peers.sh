#!/usr/bin/env bash
# swl beside other rate limiters (Node.js over ioredis) on the same workload, through the shared harness
# ../shared/bench/run-peers.sh: swl's own script run by ioredis and by redis-benchmark, and swl_bench with
# 16 requests in flight (2 threads x 8 async), the harness's concurrency of 16. Then swl_bench on one
# thread, one request at a time, for the harness's concurrency of 1.
#
#   bash bench/peers.sh [requests=40000] [rounds=3]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
requests=${1:-40000}
rounds=${2:-3}
harness=../shared/bench/run-peers.sh

build_swl_bench
bench=$SWL_BENCH
if [ -f "$harness" ]; then
  command -v node >/dev/null && command -v npm >/dev/null || install_missing nodejs npm
  "$bench" --print-script >build-bench/swl.lua
  SWL_SCRIPT=$PWD/build-bench/swl.lua SWL_BENCH="$bench --mode async --pipeline 8" bash "$harness" "$requests" "$rounds"
else
  echo "bench/peers.sh: the peers' harness $harness is not here (it ships in ../shared beside the project in its" >&2
  echo "development setup, not in a clone), so only swl's own row is measured" >&2
  echo "| contender | decisions/s (median of $rounds) | p99 us (median) |"
  echo "|---|---|---|"
fi

workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
for round in $(seq "$rounds"); do
  "$bench" --port "$REDIS_PORT" --keys 10000 --limit 100 --window-ms 1000 --requests "$requests" --mode sync 2>/dev/null |
    tail -1
done | python3 -c '
import sys, json, statistics as st
rows = [json.loads(line) for line in sys.stdin if line.strip()]
print("| swl_bench sync, 1 thread (C=1) | %.0f | %.1f |" % (st.median(r["decisions_per_sec"] for r in rows),
                                                         st.median(r["p99_us"] for r in rows)))'
