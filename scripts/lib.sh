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

# Starts a private redis-server on a free loopback port (never 6379), without persistence. Sets
# REDIS_PORT and REDIS_PID; stop_private_redis stops that process and no other.
start_private_redis() {
  local workdir=$1 attempt port
  for attempt in $(seq 20); do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue  # something listens there already
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
      --logfile "$workdir/redis.log" --dir "$workdir" >/dev/null &
    REDIS_PID=$!
    for _ in $(seq 100); do
      if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
        REDIS_PORT=$port
        return 0
      fi
      kill -0 "$REDIS_PID" 2>/dev/null || break  # it exited: the port was taken after all
      sleep 0.05
    done
    stop_private_redis
  done
  echo "could not start a private redis-server" >&2
  return 1
}

stop_private_redis() {
  if [ -n "${REDIS_PID:-}" ]; then
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=
  fi
}
