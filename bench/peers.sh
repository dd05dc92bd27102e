#!/usr/bin/env bash
# swl beside other rate limiters (Node.js over ioredis) on the same workload, through the shared harness
# ../shared/bench/run-peers.sh: swl's own script run by ioredis and by redis-benchmark, and swl_bench with
# 16 requests in flight (2 threads x 8 async), the harness's concurrency of 16. Then swl_bench on one
# thread, one request at a time, beside rate-limiter-flexible at one request at a time, on a server of
# their own, taking turns.
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

# One request in flight (C=1) on one private server, swl_bench --mode sync and rate-limiter-flexible
# taking turns round by round: the harness's C=1 rows each run on its own server, minutes apart from swl's,
# and at C=1 a decision waits on the machine's scheduling as much as on either side's work, which moves
# between runs by a third.
workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
common=(--port "$REDIS_PORT" --keys 10000 --limit 100 --window-ms 1000 --requests "$requests")
rlf=()
if [ -f "$harness" ]; then
  mkdir -p build-bench/peers
  cp ../shared/bench/package.json ../shared/bench/peers.js build-bench/peers/
  (cd build-bench/peers && npm install --no-audit --no-fund --silent >/dev/null 2>&1) && rlf=(node build-bench/peers/peers.js --peer rlf)
fi
for round in $(seq "$rounds"); do
  echo "swl $("$bench" "${common[@]}" --mode sync 2>/dev/null | tail -1)"
  [ ${#rlf[@]} -eq 0 ] || echo "rlf $("${rlf[@]}" "${common[@]}" --concurrency 1 | tail -1)"
done | python3 -c '
import sys, json, statistics as st
rows = {}
for line in sys.stdin:
    who, result = line.split(" ", 1)
    rows.setdefault(who, []).append(json.loads(result))
rate = {who: st.median(r["decisions_per_sec"] for r in runs) for who, runs in rows.items()}
p99 = {who: st.median(r["p99_us"] for r in runs) for who, runs in rows.items()}
print("| swl_bench sync, 1 thread (C=1) | %.0f | %.1f |" % (rate["swl"], p99["swl"]))
if "rlf" in rate:
    print("| rlf C=1, taking turns with the row above on its server | %.0f | %.1f |" % (rate["rlf"], p99["rlf"]))
    ratios = ", ".join("%.2f" % (s["decisions_per_sec"] / r["decisions_per_sec"]) for s, r in zip(rows["swl"], rows["rlf"]))
    print("\nswl / rlf at C=1, on one server: %.2fx (medians; by round: %s)" % (rate["swl"] / rate["rlf"], ratios))'
