#!/usr/bin/env bash
# swl-ratelimit over gRPC beside the same decisions made in process (its Decider called directly), on
# one private redis-server, at 16 and 64 calls in flight: the server called as Envoy calls it (gRPC's
# async client, all calls in flight on one channel), the Decider by a thread per call in flight. Rounds
# alternate the two; medians, and the server's rate over the in-process one.
# The workload is bench/README's: one descriptor per request, 10,000 users, 100 per second each.
#
#   bash bench/ratelimit_service.sh [requests=40000] [rounds=3]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
requests=${1:-40000}
rounds=${2:-3}
install_missing g++ make cmake pkg-config libhiredis-dev redis-server redis-tools libyaml-cpp-dev libgrpc++-dev \
  libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libhowardhinnant-date-dev prometheus-cpp-dev libevent-dev libasio-dev \
  python3
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=OFF \
  -DSWL_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build-bench -j"$(nproc)" --target swl-ratelimit ratelimit_service >/dev/null
workdir=$(mktemp -d)
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
cat >"$workdir/bench.yaml" <<'YAML'
domain: bench
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 100}
YAML
build-bench/ratelimit/swl-ratelimit --config "$workdir/bench.yaml" --redis "127.0.0.1:$REDIS_PORT" \
  --listen 127.0.0.1:0 --pool-size 64 >"$workdir/server.out" &
server_pid=$!
for _ in $(seq 500); do grep -q 'listening on' "$workdir/server.out" && break; sleep 0.02; done
address=$(sed -n 's/.*listening on \([^,]*\),.*/\1/p' "$workdir/server.out")

for in_flight in 16 64; do
  for round in $(seq "$rounds"); do
    modes=(in-process service)
    [ $((round % 2)) -eq 0 ] && modes=(service in-process)
    for mode in "${modes[@]}"; do
      build-bench/bench/ratelimit_service --mode "$mode" --config "$workdir/bench.yaml" --redis-port "$REDIS_PORT" \
        --server "$address" --in-flight "$in_flight" --requests "$requests"
    done
  done
done | python3 -c '
import sys, json, statistics as st
rows = [json.loads(line) for line in sys.stdin if line.strip()]
print("| calls in flight | in process: decisions/s | p99 us | swl-ratelimit over gRPC: decisions/s | p99 us | server / in process |")
print("|--:|--:|--:|--:|--:|--:|")
for in_flight in sorted({r["in_flight"] for r in rows}):
    rate = {m: st.median(r["decisions_per_sec"] for r in rows if r["in_flight"] == in_flight and r["mode"] == m) for m in ("in-process", "service")}
    p99 = {m: st.median(r["p99_us"] for r in rows if r["in_flight"] == in_flight and r["mode"] == m) for m in ("in-process", "service")}
    print("| %d | %.0f | %.0f | %.0f | %.0f | %.2f |" % (in_flight, rate["in-process"], p99["in-process"], rate["service"], p99["service"], rate["service"] / rate["in-process"]))
'
