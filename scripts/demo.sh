#!/usr/bin/env bash
# The main job: installs what is missing, builds the examples, starts a private redis-server, runs
# examples/basic against it (admitted and rejected requests, remaining and retry_after) and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

install_missing g++ make cmake pkg-config libhiredis-dev redis-server redis-tools
cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=ON >/dev/null
cmake --build build-demo -j"$(nproc)" --target basic

workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
echo "private redis-server on 127.0.0.1:$REDIS_PORT (pid $REDIS_PID)"
build-demo/examples/basic 127.0.0.1 "$REDIS_PORT"
