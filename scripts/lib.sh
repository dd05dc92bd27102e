# Shared by scripts/demo.sh and scripts/test.sh. Debian 12; run as root or with sudo available.

# Installs the Debian packages among "$@" that are not installed yet, and nothing else.
install_missing() {
  local missing=() package
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local as_root=()
  [ "$(id -u)" -ne 0 ] && as_root=(sudo)
  echo "installing: ${missing[*]}"
  "${as_root[@]}" apt-get update -q
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Builds bench/swl_bench (Release) in build-bench, installing what it needs; sets SWL_BENCH to its path.
build_swl_bench() {
  install_missing g++ make cmake pkg-config libhiredis-dev libevent-dev libasio-dev redis-server redis-tools python3
  local module=() module_source
  if module_source=$(module_header_tree); then module=(-DSWL_MODULE_SOURCE="$module_source"); fi
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=OFF \
    -DSWL_BUILD_BENCHMARKS=ON "${module[@]}" >/dev/null
  cmake --build build-bench -j"$(nproc)" --target swl_bench >/dev/null
  SWL_BENCH=$PWD/build-bench/bench/swl_bench
  SWL_NATIVE_MODULE=
  if [ ${#module[@]} -gt 0 ]; then
    cmake --build build-bench -j"$(nproc)" --target swl_native >/dev/null
    SWL_NATIVE_MODULE=$PWD/build-bench/module/swl_native.so
  fi
}

# The module (module/) builds against the module header of a Redis source tree, which Debian's
# redis-server does not ship: redis 7.4.1's, taken from ../shared/deps into build-module-source, whose
# path this prints. Fails, printing nothing, where the tarball is not (a user's clone).
module_header_tree() {
  [ -f ../shared/deps/redis-7.4.1.tar.gz ] || return 1
  mkdir -p build-module-source
  tar -xzf ../shared/deps/redis-7.4.1.tar.gz -C build-module-source --strip-components=1 redis-7.4.1/src/redismodule.h
  echo "$PWD/build-module-source"
}

# Starts a private redis-server on a free loopback port (never 6379), without persistence, with any
# further redis-server arguments given after the work directory. Sets REDIS_PORT and REDIS_PID, and
# remembers the pid: stop_private_redis stops every server started this way and no other process.
# Ports stay below 55536, so a cluster node's bus port (port + 10000) is a valid port too.
# REDIS_LAUNCHER, when set, names a program the server runs under (bench/native_instructions.sh:
# valgrind), which then gets 30 s to answer instead of 5.
REDIS_PIDS=()
REDIS_LAUNCHER=()
start_private_redis() {
  local workdir=$1 attempt port
  shift
  for attempt in $(seq 20); do
    port=$((20000 + RANDOM % 35000))
    # something listens there, or on the cluster bus port beside it, already
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$((port + 10000))") 2>/dev/null && continue
    "${REDIS_LAUNCHER[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
      --logfile "$workdir/redis-$port.log" --dir "$workdir" "$@" >/dev/null &
    REDIS_PID=$!
    REDIS_PIDS+=("$REDIS_PID")
    for _ in $(seq $((${#REDIS_LAUNCHER[@]} > 0 ? 600 : 100))); do
      if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
        REDIS_PORT=$port
        return 0
      fi
      kill -0 "$REDIS_PID" 2>/dev/null || break  # it exited: the port was taken after all
      sleep 0.05
    done
  done
  echo "could not start a private redis-server" >&2
  return 1
}

stop_private_redis() {
  local pid
  for pid in "${REDIS_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  REDIS_PIDS=()
}

# Starts a Redis Cluster of $2 masters (no replicas) from private redis-servers; sets CLUSTER_PORTS.
start_private_cluster() {
  local workdir=$1 masters=$2 nodes=() i
  CLUSTER_PORTS=()
  for i in $(seq "$masters"); do
    start_private_redis "$workdir" --cluster-enabled yes --cluster-config-file "nodes-$i.conf"
    CLUSTER_PORTS+=("$REDIS_PORT")
    nodes+=("127.0.0.1:$REDIS_PORT")
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$workdir/cluster-create.log" 2>&1
  for _ in $(seq 200); do
    redis-cli -p "${CLUSTER_PORTS[0]}" cluster info | grep -q cluster_state:ok && return 0
    sleep 0.05
  done
  echo "the private cluster did not reach cluster_state:ok" >&2
  return 1
}
