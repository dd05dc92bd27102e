#!/usr/bin/env bash
# What ConnectionOptions::replica_acks costs: swl_bench against a master with one replica (both private
# redis-servers on this machine), with and without WAIT for that replica after every call, rounds
# interleaved; the table shows medians and the ratio.
#
#   bash bench/durability.sh [rounds=3] [requests=50000]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
rounds=${1:-3}
requests=${2:-50000}

build_swl_bench
bench=$SWL_BENCH
workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
master=$REDIS_PORT
start_private_redis "$workdir" --replicaof 127.0.0.1 "$master"
for _ in $(seq 100); do
  redis-cli -p "$master" info replication | grep -q "slave0:.*state=online" && break
  sleep 0.1
done
echo "master on $master, its replica on $REDIS_PORT; $rounds rounds of $requests requests" >&2

results="$workdir/results"
workload=(--port "$master" --keys 10000 --limit 100 --window-ms 1000 --requests "$requests")
for round in $(seq "$rounds"); do
  echo "round $round" >&2
  for threads in 1 8; do
    mode=sync
    [ "$threads" -gt 1 ] && mode=pool
    for acks in 0 1; do
      echo "$mode-$threads acks=$acks $("$bench" "${workload[@]}" --mode "$mode" --threads "$threads" \
        --replica-acks "$acks" --command-timeout-ms 1000 2>/dev/null | tail -1)" >>"$results"
    done
  done
done

python3 - "$results" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, acks, payload = line.split(" ", 2)
    rows.setdefault((mode, acks), []).append(json.loads(payload))
print("| mode | replica_acks | decisions/s (median) | p99 us (median) | vs no WAIT |")
print("|---|--:|--:|--:|--:|")
for (mode, acks), runs in rows.items():
    rate = statistics.median(r["decisions_per_sec"] for r in runs)
    base = statistics.median(r["decisions_per_sec"] for r in rows[(mode, "acks=0")])
    print("| %s | %s | %.0f | %.0f | %.2f |" % (mode, acks.split("=")[1], rate,
          statistics.median(r["p99_us"] for r in runs), rate / base))
PY
