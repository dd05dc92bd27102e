#!/usr/bin/env bash
# swl's throughput beside its baselines, in one run against one private redis-server:
# a bare hiredis loop sending the same EVALSHA (swl_bench --mode raw) and redis-benchmark running the
# same script with the same arguments. Each contender runs once per round, rounds interleaved; the
# table shows medians and the ratios the targets in bench/README.md are about. Where the module is built
# (module/, against ../shared/deps' Redis header), the server loads it: the swl rows above it keep to the
# script (--native-module never), and the module's rows, its ceiling through redis-benchmark and swl's own,
# are measured on the same server in the same rounds as the script's.
#
#   bash bench/throughput.sh [rounds=3] [requests=100000]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
rounds=${1:-3}
requests=${2:-100000}

build_swl_bench
bench=$SWL_BENCH

workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
if [ -n "$SWL_NATIVE_MODULE" ]; then
  start_private_redis "$workdir" --loadmodule "$SWL_NATIVE_MODULE"
else
  echo "no module built (../shared/deps/redis-7.4.1.tar.gz is not here): the script's rows only" >&2
  start_private_redis "$workdir"
fi
echo "private redis-server on 127.0.0.1:$REDIS_PORT; $rounds rounds of $requests requests (x2 or x4 for pipelined)" >&2
"$bench" --print-script >"$workdir/swl.lua"
sha=$(redis-cli -p "$REDIS_PORT" script load "$(cat "$workdir/swl.lua")")
results="$workdir/results"

workload=(--port "$REDIS_PORT" --keys 10000 --limit 100 --window-ms 1000)
swl() {  # label, swl_bench flags...: the script's
  local label=$1
  shift
  echo "$label $("$bench" "${workload[@]}" --native-module never "$@" 2>/dev/null | tail -1)" >>"$results"
}
swl_native() {  # label, swl_bench flags...: the module's
  local label=$1
  shift
  echo "$label $("$bench" "${workload[@]}" --native-module required "$@" 2>/dev/null | tail -1)" >>"$results"
}
benchmark() {  # label, clients, pipeline, requests[, command]: the same call swl makes (window, limit, cost, Redis time, member, ttl)
  local rps command=(EVALSHA "$sha" 1)
  [ "${5:-}" = native ] && command=(SWL.DECIDE)
  rps=$(redis-benchmark -p "$REDIS_PORT" -c "$2" -P "$3" -n "$4" -r 10000 -q \
    "${command[@]}" bench:k__rand_int__ 1000000 100 1 '' m__rand_int__ 1000 0 2>/dev/null |
    tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | awk '{print $1}')
  echo "$1 {\"decisions_per_sec\":${rps:-0},\"p99_us\":0}" >>"$results"
}

for round in $(seq "$rounds"); do
  echo "round $round" >&2
  swl raw-1 --mode raw --threads 1 --requests "$requests"
  swl sync-1 --mode sync --threads 1 --requests "$requests"
  swl raw-2 --mode raw --threads 2 --requests "$requests"
  swl pool-2 --mode pool --threads 2 --requests "$requests"
  swl raw-8 --mode raw --threads 8 --requests "$requests"
  swl pool-8 --mode pool --threads 8 --requests "$requests"
  swl raw-1x16 --mode raw --threads 1 --pipeline 16 --requests $((requests * 2))
  swl batch-1x16 --mode batch --threads 1 --pipeline 16 --requests $((requests * 2))
  swl async-1x16 --mode async --threads 1 --pipeline 16 --requests $((requests * 2))
  benchmark redis-benchmark-c1-P16 1 16 $((requests * 2))
  swl batch-1x512 --mode batch --threads 1 --pipeline 512 --requests $((requests * 4))
  swl async-1x512 --mode async --threads 1 --pipeline 512 --requests $((requests * 4))
  benchmark redis-benchmark-c50-P16 50 16 $((requests * 4))
  if [ -n "$SWL_NATIVE_MODULE" ]; then
    swl_native native-sync-1 --mode sync --threads 1 --requests "$requests"
    swl_native native-async-1x512 --mode async --threads 1 --pipeline 512 --requests $((requests * 4))
    benchmark native-redis-benchmark-c50-P16 50 16 $((requests * 4)) native
  fi
done

python3 - "$results" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, _, payload = line.partition(" ")
    rows.setdefault(label, []).append(json.loads(payload))
rate = {k: statistics.median(r["decisions_per_sec"] for r in v) for k, v in rows.items()}
p99 = {k: statistics.median(r.get("p99_us", 0) for r in v) for k, v in rows.items()}
print("| contender | decisions/s (median) | p99 us (median) |")
print("|---|---:|---:|")
for k in rows:
    print("| %s | %.0f | %s |" % (k, rate[k], "%.1f" % p99[k] if p99[k] else "-"))
print()
print("| target | measured | goal |")
print("|---|---:|---|")
def ratio(a, b, goal):
    print("| %s / %s | %.3f | >= %s |" % (a, b, rate[a] / rate[b], goal))
ratio("sync-1", "raw-1", "0.95")
ratio("pool-2", "raw-2", "0.9")
ratio("pool-8", "raw-8", "0.9")
ratio("batch-1x16", "redis-benchmark-c1-P16", "0.8")
ratio("async-1x16", "redis-benchmark-c1-P16", "0.8")
best = max(rate, key=lambda k: rate[k] if not k.startswith("redis-benchmark") else 0)
print("| best swl mode (%s) | %.0f/s | >= 100000/s |" % (best, rate[best]))
print("| p99 sync-1 - raw-1 | %.1f us | <= 10 us |" % (p99["sync-1"] - p99["raw-1"]))
if "native-redis-benchmark-c50-P16" in rate:
    # The module's ceiling against the script's, each the server's own (redis-benchmark, 800 in flight).
    print("| native-redis-benchmark-c50-P16 / redis-benchmark-c50-P16 | %.3f | >= 3 |"
          % (rate["native-redis-benchmark-c50-P16"] / rate["redis-benchmark-c50-P16"]))
    print("| native-async-1x512 / async-1x512 | %.3f | - |" % (rate["native-async-1x512"] / rate["async-1x512"]))
PY
