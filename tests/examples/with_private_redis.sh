#!/usr/bin/env bash
# Runs an example program against a private redis-server (started and stopped here, by pid):
#   with_private_redis.sh PROGRAM   runs PROGRAM 127.0.0.1 PORT
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib.sh"
workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
"$1" 127.0.0.1 "$REDIS_PORT"
