#!/usr/bin/env bash
# The event-loop limiters against the ceiling of the script they run, in one run on one private
# redis-server: redis-benchmark on swl's script (50 clients x 16 pipelined: Redis's own limit for that
# script; and 16 clients, one call each, 16 in flight), a bare hiredis loop pipelining 16 at a time (swl_bench --mode raw), and 16 calls in flight on
# one connection through the libevent limiter (--mode async) and the Asio limiter (--mode asio). Rounds
# interleave the four, so a loaded machine slows them alike; prints medians and each one's ratio to
# redis-benchmark's.
#
#   bash bench/event_loops.sh [requests=80000] [rounds=5]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
requests=${1:-80000}
rounds=${2:-5}
build_swl_bench
workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
"$SWL_BENCH" --print-script >"$workdir/swl.lua"
sha=$(redis-cli -p "$REDIS_PORT" script load "$(cat "$workdir/swl.lua")")
workload=(--port "$REDIS_PORT" --keys 10000 --limit 100 --window-ms 1000 --requests "$requests")
for round in $(seq "$rounds"); do
  rps=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n $((requests * 2)) -c 50 -r 10000 -P 16 -q \
    EVALSHA "$sha" 1 rb:__rand_int__ 1000000 100 1 2>/dev/null | tr '\r' '\n' |
    grep -o '[0-9.]* requests per second' | tail -1 | awk '{print $1}')
  echo "{\"mode\":\"redis-benchmark -c 50 -P 16\",\"decisions_per_sec\":${rps:-0},\"p99_us\":0}"
  rps=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n "$requests" -c 16 -r 10000 -P 1 -q \
    EVALSHA "$sha" 1 rb:__rand_int__ 1000000 100 1 2>/dev/null | tr '\r' '\n' |
    grep -o '[0-9.]* requests per second' | tail -1 | awk '{print $1}')
  echo "{\"mode\":\"redis-benchmark -c 16 -P 1 (16 in flight)\",\"decisions_per_sec\":${rps:-0},\"p99_us\":0}"
  "$SWL_BENCH" "${workload[@]}" --mode raw --pipeline 16 2>/dev/null | tail -1
  "$SWL_BENCH" "${workload[@]}" --mode async --pipeline 16 2>/dev/null | tail -1
  "$SWL_BENCH" "${workload[@]}" --mode asio --pipeline 16 2>/dev/null | tail -1
done | python3 -c '
import sys, json, statistics as st
rows = {}
for line in sys.stdin:
    if line.strip():
        row = json.loads(line)
        name = row["mode"] if "redis-benchmark" in row["mode"] else "swl_bench --mode %s, 16 in flight" % row["mode"]
        rows.setdefault(name, []).append(row)
ceiling = st.median(r["decisions_per_sec"] for r in rows["redis-benchmark -c 50 -P 16"])
print("| contender | decisions/s (median of %d) | / redis-benchmark | p99 us (median) |" % len(rows["redis-benchmark -c 50 -P 16"]))
print("|---|--:|--:|--:|")
for name, runs in rows.items():
    rate = st.median(r["decisions_per_sec"] for r in runs)
    print("| %s | %.0f | %.3f | %.1f |" % (name, rate, rate / ceiling, st.median(r["p99_us"] for r in runs)))'
