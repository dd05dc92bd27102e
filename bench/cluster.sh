#!/usr/bin/env bash
# swl over a three-master Redis Cluster beside swl over one redis-server, in one run: the same workload,
# the same swl_bench modes, rounds interleaved. The cluster has no replicas, so both sides do the same
# work per decision and the table shows what routing by hash slot costs and what spreading keys over
# three servers buys. All four redis-servers share this machine's cores with swl_bench.
#
#   bash bench/cluster.sh [rounds=3] [requests=100000]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
rounds=${1:-3}
requests=${2:-100000}

build_swl_bench
bench=$SWL_BENCH

workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
single=$REDIS_PORT
start_private_cluster "$workdir" 3
echo "single node on $single; cluster on ${CLUSTER_PORTS[*]}; $rounds rounds of $requests requests" >&2
results="$workdir/results"

workload=(--keys 10000 --limit 100 --window-ms 1000 --requests "$requests")
run() {  # label, swl_bench flags...
  local label=$1
  shift
  echo "$label $("$bench" "${workload[@]}" "$@" 2>/dev/null | tail -1)" >>"$results"
}

for round in $(seq "$rounds"); do
  echo "round $round" >&2
  for threads in 1 8; do
    run "single-pool-$threads" --port "$single" --mode pool --threads "$threads"
    run "cluster-pool-$threads" --port "${CLUSTER_PORTS[0]}" --cluster --mode pool --threads "$threads"
  done
  run single-batch-2x16 --port "$single" --mode batch --threads 2 --pipeline 16
  run cluster-batch-2x16 --port "${CLUSTER_PORTS[0]}" --cluster --mode batch --threads 2 --pipeline 16
done

python3 - "$results" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, _, payload = line.partition(" ")
    rows.setdefault(label, []).append(json.loads(payload))
rate = {k: statistics.median(r["decisions_per_sec"] for r in v) for k, v in rows.items()}
p99 = {k: statistics.median(r["p99_us"] for r in v) for k, v in rows.items()}
print("| workload | single node, decisions/s | 3-master cluster, decisions/s | cluster / single | p99 us single / cluster |")
print("|---|---:|---:|---:|---|")
for name in ("pool-1", "pool-8", "batch-2x16"):
    s, c = "single-" + name, "cluster-" + name
    print("| %s | %.0f | %.0f | %.2f | %.0f / %.0f |" % (name, rate[s], rate[c], rate[c] / rate[s], p99[s], p99[c]))
PY
