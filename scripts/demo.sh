#!/usr/bin/env bash
# The main job: installs what is missing, builds examples/http_service, starts a private redis-server
# and the service, fires a burst of real HTTP requests at it with curl, prints the status codes and
# rate-limit headers it got, and stops both.
#
#   bash scripts/demo.sh                the HTTP service
#   bash scripts/demo.sh token_budget   examples/token_budget: tokens per minute, reserved and settled
#   bash scripts/demo.sh ratelimit      swl-ratelimit, Envoy's rate limit service, called as Envoy calls it
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

if [ "${1:-}" = token_budget ]; then
  install_missing g++ make cmake pkg-config libhiredis-dev redis-server redis-tools
  cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=ON >/dev/null
  cmake --build build-demo -j"$(nproc)" --target token_budget
  workdir=$(mktemp -d)
  trap 'stop_private_redis; rm -rf "$workdir"' EXIT
  start_private_redis "$workdir"
  echo "private redis-server on 127.0.0.1:$REDIS_PORT (pid $REDIS_PID)"
  build-demo/examples/token_budget 127.0.0.1 "$REDIS_PORT"
  exit 0
elif [ "${1:-}" = ratelimit ]; then
  install_missing g++ make cmake pkg-config libhiredis-dev redis-server redis-tools libyaml-dev libgrpc++-dev \
    libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libhowardhinnant-date-dev prometheus-cpp-dev
  cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=ON >/dev/null
  cmake --build build-demo -j"$(nproc)" --target swl-ratelimit swl-ratelimit-probe
  workdir=$(mktemp -d)
  server_pid=
  trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; stop_private_redis; rm -rf "$workdir"' EXIT
  start_private_redis "$workdir"
  echo "private redis-server on 127.0.0.1:$REDIS_PORT (pid $REDIS_PID)"
  cp ratelimit/package/config.yaml "$workdir/shop.yaml"  # the example the swl-ratelimit package ships
  echo "configuration ($workdir/shop.yaml):"
  grep -v '^#' "$workdir/shop.yaml" | sed 's/^/  /'
  build-demo/ratelimit/swl-ratelimit --config "$workdir/shop.yaml" --redis "127.0.0.1:$REDIS_PORT" \
    --listen 127.0.0.1:0 >"$workdir/server.out" &
  server_pid=$!
  for _ in $(seq 500); do grep -q 'listening on' "$workdir/server.out" && break; sleep 0.02; done
  cat "$workdir/server.out"
  address=$(sed -n 's/.*listening on \([^,]*\),.*/\1/p' "$workdir/server.out")
  probe() { build-demo/ratelimit/swl-ratelimit-probe --server "$address" --domain shop "$@"; }
  echo
  echo "== four requests by alice to /search: user 3 a minute, /search 5 a minute, decided together"
  for _ in 1 2 3 4; do probe user=alice route=/search; done
  echo
  echo "== the refused fourth took nothing of /search's five: bob's request finds two left, and takes one"
  probe user=bob route=/search
  exit 0
elif [ -n "${1:-}" ]; then
  echo "usage: $0 [token_budget|ratelimit]" >&2
  exit 2
fi

install_missing g++ make cmake pkg-config libhiredis-dev redis-server redis-tools libcpp-httplib-dev libhowardhinnant-date-dev curl
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=ON >/dev/null
cmake --build build-demo -j"$(nproc)" --target http_service

workdir=$(mktemp -d)
service_pid=
stop_all() {
  [ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
  stop_private_redis
  rm -rf "$workdir"
}
trap stop_all EXIT
start_private_redis "$workdir"
echo "private redis-server on 127.0.0.1:$REDIS_PORT (pid $REDIS_PID)"

# The service: 5 requests per client and 8 per route, per 10 seconds, and 1,000 per client per day in Berlin.
for attempt in $(seq 20); do
  http_port=$((20000 + RANDOM % 35000))
  build-demo/examples/http_service --redis-port "$REDIS_PORT" --port "$http_port" --client-limit 5 \
    --route-limit 8 --window-s 10 --daily 1000 --zone Europe/Berlin --x-headers >"$workdir/service.log" 2>&1 &
  service_pid=$!
  for _ in $(seq 100); do
    grep -q "listening" "$workdir/service.log" && break 2
    kill -0 "$service_pid" 2>/dev/null || break
    sleep 0.05
  done
  service_pid=
done
[ -n "$service_pid" ] || { echo "could not start examples/http_service" >&2; exit 1; }
echo "examples/http_service on 127.0.0.1:$http_port (pid $service_pid): 5 per client, 8 per route, per 10 s; 1,000 per client per Berlin day"
echo

# A burst of 7 requests from this client: the first 5 pass, then 429 with Retry-After.
for i in $(seq 7); do
  echo "GET /hello #$i"
  curl -s -D - -o /dev/null "http://127.0.0.1:$http_port/hello" |
    grep -iE '^(HTTP/|Retry-After|RateLimit|X-RateLimit)' | tr -d '\r' | sed 's/^/  /'
done
