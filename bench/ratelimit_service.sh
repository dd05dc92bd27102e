#!/usr/bin/env bash
# swl-ratelimit over gRPC beside the same decisions made in process (its Decider called directly), on
# one private redis-server, at 16 and 64 calls in flight: the server called as Envoy calls it (gRPC's
# async client, all calls in flight on one channel), the Decider by a thread per call in flight. A
# second server answers the same requests from a configuration where the descriptor is unlimited: gRPC
# alone, no Redis, the ceiling of any server on this machine. A baseline revision adds both servers as
# they were there (built in a worktree), each server with its own default flags. Each round runs every
# contender, in an order that turns.
# Per contender: the median rate and p99, the server's and Redis's CPU per call (from /proc, user and
# system), the server's threads' context switches per call, and the median of each round's rate over
# that round's in-process rate. A server thread waits on Redis while Redis decides its round, so its rate
# is at most 1 / (server CPU + Redis CPU per call): the last column gives that ceiling over the
# in-process rate.
# The workload is bench/README's: one descriptor per request, 10,000 users, 100 per second each.
#
#   bash bench/ratelimit_service.sh [requests=40000] [rounds=3] [baseline: a revision, or a patch to this one]
#
# A patch (bench/prototypes/*.patch: designs measured and not kept) is applied to this revision in a
# worktree of its own, made again each run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
requests=${1:-40000}
rounds=${2:-3}
baseline=${3:-}
install_missing g++ make cmake pkg-config libhiredis-dev redis-server redis-tools libyaml-dev libgrpc++-dev \
  libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libhowardhinnant-date-dev prometheus-cpp-dev libevent-dev libasio-dev \
  python3
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=OFF \
  -DSWL_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build-bench -j"$(nproc)" --target swl-ratelimit ratelimit_service >/dev/null
servers=("swl-ratelimit=build-bench/ratelimit/swl-ratelimit")
if [ -f "$baseline" ]; then
  name=swl-ratelimit+$(basename "$baseline" .patch)
  tree=$PWD/build-bench/tree-$(basename "$baseline" .patch)
  [ -d "$tree" ] && git worktree remove --force "$tree"
  git worktree add --detach "$tree" HEAD >/dev/null
  git -C "$tree" apply "$PWD/$baseline"
elif [ -n "$baseline" ]; then
  name=swl-ratelimit@$baseline
  tree=$PWD/build-bench/tree-$baseline
  [ -d "$tree" ] || git worktree add --detach "$tree" "$baseline" >/dev/null
fi
if [ -n "$baseline" ]; then
  cmake -S "$tree" -B "$tree-build" -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$tree-build" -j"$(nproc)" --target swl-ratelimit >/dev/null
  servers+=("$name=$tree-build/ratelimit/swl-ratelimit")
fi

workdir=$(mktemp -d)
server_pids=()
trap 'for pid in "${server_pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done; stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
cat >"$workdir/limited.yaml" <<'YAML'
domain: bench
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 100}
YAML
sed 's/rate_limit: .*/rate_limit: {unlimited: true}/' "$workdir/limited.yaml" >"$workdir/unlimited.yaml"

# Starts server $2 (a program) on configuration $3 as contender $1; remembers its
# address and pid.
declare -A address pid_of
start_server() {
  local name=$1 program=$2 config=$3 out="$workdir/$1.out"
  "$program" --config "$config" --redis "127.0.0.1:$REDIS_PORT" --listen 127.0.0.1:0 >"$out" &
  pid_of[$name]=$!
  server_pids+=($!)
  for _ in $(seq 500); do grep -q 'listening on' "$out" && break; sleep 0.02; done
  address[$name]=$(sed -n 's/.*listening on \([^,]*\),.*/\1/p' "$out")
}
contenders=(in-process)
for server in "${servers[@]}"; do
  name=${server%%=*} program=${server#*=}
  start_server "$name" "$program" "$workdir/limited.yaml"
  start_server "$name, unlimited (gRPC alone)" "$program" "$workdir/unlimited.yaml"
  contenders+=("$name" "$name, unlimited (gRPC alone)")
done

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Context switches of every thread of process $1 so far, voluntary or not: a call that crosses threads
# costs some.
switches() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ {sum += $2} END {print sum}'; }
for in_flight in 16 64; do
  for round in $(seq "$rounds"); do
    order=("${contenders[@]}")
    for _ in $(seq $((round % ${#order[@]}))); do order=("${order[@]:1}" "${order[0]}"); done
    for contender in "${order[@]}"; do
      redis_before=$(ticks "$REDIS_PID")
      if [ "$contender" = in-process ]; then
        line=$(build-bench/bench/ratelimit_service --mode in-process --config "$workdir/limited.yaml" \
          --redis-port "$REDIS_PORT" --in-flight "$in_flight" --requests "$requests")
        server_ticks=0 server_switches=0 redis_ticks=$(($(ticks "$REDIS_PID") - redis_before))
      else
        before=$(ticks "${pid_of[$contender]}") switches_before=$(switches "${pid_of[$contender]}")
        line=$(build-bench/bench/ratelimit_service --mode service --config "$workdir/limited.yaml" \
          --redis-port "$REDIS_PORT" --server "${address[$contender]}" --in-flight "$in_flight" --requests "$requests")
        server_ticks=$(($(ticks "${pid_of[$contender]}") - before))
        server_switches=$(($(switches "${pid_of[$contender]}") - switches_before))
        redis_ticks=$(($(ticks "$REDIS_PID") - redis_before))
      fi
      echo "{\"contender\":\"$contender\",\"round\":$round,\"server_ticks\":$server_ticks,\"redis_ticks\":$redis_ticks,\"server_switches\":$server_switches,\"ticks_per_second\":$(getconf CLK_TCK),${line#\{}"
    done
  done
done | python3 -c '
import sys, json, statistics as st
rows = [json.loads(line) for line in sys.stdin if line.strip()]
contenders = sys.argv[1].split("|")
print("| contender | calls in flight | decisions/s (median) | p99 us (median) | server CPU us per call (median) | Redis CPU us per call (median) | server thread switches per call (median) | / in process (median of rounds) | ceiling of a thread that waits on Redis, / in process (median) |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
us = lambda r, ticks: 1e6 * r[ticks] / r["ticks_per_second"] / r["decisions"]
for in_flight in sorted({r["in_flight"] for r in rows}):
    base = {r["round"]: r["decisions_per_sec"] for r in rows if r["in_flight"] == in_flight and r["contender"] == "in-process"}
    for c in contenders:
        mine = [r for r in rows if r["in_flight"] == in_flight and r["contender"] == c]
        cpu = "" if c == "in-process" else "%.0f" % st.median(us(r, "server_ticks") for r in mine)
        redis = "%.0f" % st.median(us(r, "redis_ticks") for r in mine)
        ceiling = "" if c == "in-process" or st.median(us(r, "redis_ticks") for r in mine) < 1 else "%.2f" % st.median(
            1e6 / (us(r, "server_ticks") + us(r, "redis_ticks")) / base[r["round"]] for r in mine)
        switches = "" if c == "in-process" else "%.2f" % st.median(r["server_switches"] / r["decisions"] for r in mine)
        ratio = st.median(r["decisions_per_sec"] / base[r["round"]] for r in mine)
        print("| %s | %d | %.0f | %.0f | %s | %s | %s | %.2f | %s |" % (c, in_flight, st.median(r["decisions_per_sec"] for r in mine),
              st.median(r["p99_us"] for r in mine), cpu, redis, switches, ratio, ceiling))
' "$(IFS='|'; echo "${contenders[*]}")"
