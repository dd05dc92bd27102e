#!/usr/bin/env bash
# swl-ratelimit loading a large configuration: a file of N rules (100,000 by default, about 9 MB: a
# tenant's limit and its routes' with patterns in the middle of their values, names, replaces, nested
# methods and users, and shadow rules by address), given to the real server binary, against a baseline revision built in a
# worktree (as bench/ratelimit_service.sh builds its baseline). Per server and round: the seconds from
# its start until it prints "listening on", its VmRSS and VmHWM then (/proc/PID/status), and its VmRSS
# once the file has been swapped for a one-rule file and SIGHUP has reloaded it ("configuration
# reloaded"). Medians of the rounds, and the ratios of this revision's to the baseline's.
#
#   bash bench/ratelimit_config.sh [rules=100000] [rounds=3] [baseline=ef5ac21]
#
# This revision's server is build-default/ratelimit/swl-ratelimit (SERVER=... for another); the
# baseline's is built in build-bench/tree-BASELINE-build when it is not there yet (JOBS=N for its
# build's parallelism). The server connects to Redis lazily; a private redis-server is started anyway,
# so that it finds one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
rules=${1:-100000}
rounds=${2:-3}
baseline=${3:-ef5ac21}
server=${SERVER:-build-default/ratelimit/swl-ratelimit}
[ -x "$server" ] || { echo "no $server: build the swl-ratelimit target first" >&2; exit 1; }
install_missing redis-server redis-tools python3

tree=$PWD/build-bench/tree-$baseline
if [ ! -x "$tree-build/ratelimit/swl-ratelimit" ]; then
  [ -d "$tree" ] || git worktree add --detach "$tree" "$baseline" >/dev/null
  cmake -S "$tree" -B "$tree-build" -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$tree-build" -j"${JOBS:-$(nproc)}" --target swl-ratelimit >/dev/null
fi
servers=("swl-ratelimit=$server" "swl-ratelimit@$baseline=$tree-build/ratelimit/swl-ratelimit")

workdir=$(mktemp -d)
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"

python3 - "$rules" "$workdir/large.yaml" <<'PY'
import sys
rules, path = int(sys.argv[1]), sys.argv[2]
units = ["second", "minute", "hour", "day"]
with open(path, "w") as out:
    w = out.write
    w("# %d rules, as a large envoyproxy/ratelimit file has them\ndomain: bench\ndescriptors:\n" % rules)
    made = tenant = 0
    # Every descriptor has its rule: the baseline refuses more than 100,000 descriptors in a file.
    while made + 7 <= rules:
        t = tenant
        w("- key: tenant\n  value: t%d\n  rate_limit: {unit: minute, requests_per_unit: 6000, name: t%d}\n" % (t, t))
        w("  descriptors:\n")
        w("  - {key: path, value: /orders/*, rate_limit: {unit: minute, requests_per_unit: %d}}\n" % (600 + t % 7))
        w("  - {key: path, value: /u/*/x, rate_limit: {unit: hour, requests_per_unit: 300, replaces: [{name: t%d}]}}\n" % t)
        w("  - {key: path, rate_limit: {unit: %s, requests_per_unit: %d, name: t%d-any}}\n" % (units[t % 4], 1000 + t % 100, t))
        w("  - key: method\n    value: POST\n    rate_limit: {unit: second, requests_per_unit: 100}\n    descriptors:\n")
        w("    - {key: user, rate_limit: {unit: second, requests_per_unit: 10}}\n")
        w("- {key: ip, value: 10.%d.%d.%d, shadow_mode: true, rate_limit: {unit: second, requests_per_unit: 50}}\n"
          % (t >> 16, (t >> 8) & 255, t & 255))
        made += 7
        tenant += 1
    for rest in range(rules - made):
        w("- {key: client, value: c%d, rate_limit: {unit: day, requests_per_unit: 100000}}\n" % rest)
PY
cat >"$workdir/small.yaml" <<'YAML'
domain: bench
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 100}
YAML
echo "$(grep -c requests_per_unit "$workdir/large.yaml") rules, $(($(stat -c %s "$workdir/large.yaml") / 1024)) KiB" >&2

status_kb() { awk -v field="$2:" '$1 == field {print $2}' "/proc/$1/status"; }
wait_for() {  # wait_for FILE TEXT: until FILE holds TEXT, 60 s at most
  for _ in $(seq 6000); do grep -q "$2" "$1" && return 0; sleep 0.01; done
  echo "no '$2' in $1:" >&2
  cat "$1" >&2
  return 1
}

for round in $(seq "$rounds"); do
  for contender in "${servers[@]}"; do
    name=${contender%%=*} program=${contender#*=}
    cp "$workdir/large.yaml" "$workdir/config.yaml"
    out="$workdir/$round.out"
    : >"$out"
    start=$(date +%s.%N)
    "$program" --config "$workdir/config.yaml" --redis "127.0.0.1:$REDIS_PORT" --listen 127.0.0.1:0 >"$out" 2>&1 &
    server_pid=$!
    wait_for "$out" 'listening on'
    loaded=$(date +%s.%N)
    rss=$(status_kb "$server_pid" VmRSS) hwm=$(status_kb "$server_pid" VmHWM)
    cp "$workdir/small.yaml" "$workdir/config.yaml"
    kill -HUP "$server_pid"
    wait_for "$out" 'configuration reloaded'
    sleep 0.2  # the old configuration is freed once the reload has put the new one in force
    after=$(status_kb "$server_pid" VmRSS)
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=
    echo "{\"contender\":\"$name\",\"round\":$round,\"seconds\":$(awk -v a="$start" -v b="$loaded" 'BEGIN {print b - a}'),\"rss_kb\":$rss,\"hwm_kb\":$hwm,\"after_reload_kb\":$after}"
  done
done | python3 -c '
import sys, json, statistics as st
rows = [json.loads(line) for line in sys.stdin if line.strip()]
names = list(dict.fromkeys(r["contender"] for r in rows))
median = lambda name, field: st.median(r[field] for r in rows if r["contender"] == name)
print("| server | until listening, s | VmRSS then, MB | VmHWM, MB | VmRSS after a reload to one rule, MB |")
print("|---|--:|--:|--:|--:|")
for name in names:
    print("| %s | %.2f | %.0f | %.0f | %.0f |" % (name, median(name, "seconds"), median(name, "rss_kb") / 1024,
          median(name, "hwm_kb") / 1024, median(name, "after_reload_kb") / 1024))
if len(names) == 2:
    now, before = names
    print("| %s / %s | %.2f | %.2f | %.2f | %.2f |" % (now, before, *(median(now, f) / median(before, f)
          for f in ("seconds", "rss_kb", "hwm_kb", "after_reload_kb"))))
'
