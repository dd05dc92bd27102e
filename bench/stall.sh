#!/usr/bin/env bash
# What a frozen Redis costs a service: examples/http_service under wrk (32 keep-alive connections) for 3 s
# before, 3 s during and 3 s after Redis is frozen (SIGSTOP), once with the settings swl had before
# (1 s command timeout, no circuit breaker) and once with its defaults (50 ms, 250 ms of cool-down).
# Limits are high, so every request is decided by Redis and admitted: the table shows what the limiter
# costs, not what it refuses. The service fails open while Redis cannot answer. Each cell is the median
# of `rounds` rounds (httplib serves 32 keep-alive connections with 8 workers, so single runs vary).
#
#   bash bench/stall.sh [freeze_seconds=3] [rounds=3]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
seconds=${1:-3}
rounds=${2:-3}

install_missing g++ make cmake pkg-config libhiredis-dev libcpp-httplib-dev redis-server redis-tools wrk python3
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=ON >/dev/null
cmake --build build-bench -j"$(nproc)" --target http_service >/dev/null

workdir=$(mktemp -d)
service_pid=
stop_all() {
  [ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
  stop_private_redis
  rm -rf "$workdir"
}
trap stop_all EXIT
start_private_redis "$workdir"

# Starts the service with the given flags on a free port; sets HTTP_PORT and service_pid.
start_service() {
  for _ in $(seq 20); do
    HTTP_PORT=$((20000 + RANDOM % 35000))
    build-bench/examples/http_service --redis-port "$REDIS_PORT" --port "$HTTP_PORT" --client-limit 1000000000 \
      --route-limit 1000000000 --window-s 10 "$@" >"$workdir/service.log" 2>&1 &
    service_pid=$!
    for _ in $(seq 100); do
      grep -q listening "$workdir/service.log" && return 0
      kill -0 "$service_pid" 2>/dev/null || break
      sleep 0.05
    done
  done
  echo "could not start examples/http_service" >&2
  return 1
}

# wrk for `seconds` against /hello; prints "requests_per_second p99_ms".
load() {
  wrk -t2 -c32 -d"${seconds}s" --latency "http://127.0.0.1:$HTTP_PORT/hello" >"$workdir/wrk.txt" 2>&1
  python3 - "$workdir/wrk.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
value, unit = re.search(r"\s99%\s+([\d.]+)(us|ms|s)", text).groups()
p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
print("%.0f %.1f" % (rps, p99))
PY
}

results="$workdir/results"
for round in $(seq "$rounds"); do
  echo "round $round" >&2
  for settings in "before (1 s timeout, no breaker)|--command-timeout-ms 1000 --breaker-cooldown-ms 0" \
                  "defaults (50 ms timeout, 250 ms breaker)|"; do
    label=${settings%%|*}
    flags=${settings#*|}
    # shellcheck disable=SC2086
    start_service $flags
    wrk -t2 -c32 -d1s "http://127.0.0.1:$HTTP_PORT/hello" >/dev/null 2>&1  # warm up: connections, script cache
    before=$(load)
    kill -STOP "$REDIS_PID"
    frozen=$(load)
    kill -CONT "$REDIS_PID"
    after=$(load)
    echo "$label|$before $frozen $after" >>"$results"
    kill "$service_pid" && wait "$service_pid" 2>/dev/null || true
    service_pid=
  done
done

python3 - "$results" "$seconds" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, _, values = line.strip().partition("|")
    rows.setdefault(label, []).append([float(v) for v in values.split()])
print("| settings | before: requests/s | p99 ms | frozen %s s: requests/s | p99 ms | after: requests/s | p99 ms |" % sys.argv[2])
print("|---|--:|--:|--:|--:|--:|--:|")
for label, runs in rows.items():
    cells = [statistics.median(run[i] for run in runs) for i in range(6)]
    print("| %s | %.0f | %.1f | %.0f | %.1f | %.0f | %.1f |" % (label, *cells))
PY
