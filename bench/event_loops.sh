#!/usr/bin/env bash
# The event-loop limiters against the ceiling of the script they run, in one run on one private
# redis-server, with 16 calls in flight as ../shared/bench/run-peers.sh counts them (bench/peers.sh): two
# threads, each with a connection of its own and 8 calls in flight on it. Each round runs redis-benchmark
# on swl's script (50 clients x 16 pipelined: Redis's own limit for that script), a bare hiredis loop
# (swl_bench --mode raw), the libevent limiter (--mode async), the Asio limiter (--mode asio) and the same
# EVALSHA through hiredis's async API on a bare io_context (--mode asio-raw), in an
# order that turns from round to round. Each rate is divided by its own round's redis-benchmark rate, so
# that a round the machine slowed slows both sides of its ratios, and the medians of those ratios are
# printed; and beside them each contender's best round over the ceiling's best (a noisy neighbour only
# ever slows a round down, so the best rounds are the ones it disturbed least). Last, the Asio limiter's
# client CPU per decision over the bare Asio loop's, round by round: what swl's Asio face costs the
# caller's thread beyond hiredis on Asio.
# threads=1 puts all 16 in flight on one connection and one thread. A baseline revision adds its libevent
# and Asio limiters (swl_bench built in a worktree at that revision) to every round.
#
#   bash bench/event_loops.sh [requests=80000] [rounds=7] [threads=2] [baseline revision]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
requests=${1:-80000}
rounds=${2:-7}
threads=${3:-2}
baseline=${4:-}
in_flight=16
build_swl_bench
contenders=(ceiling raw async asio asio-raw)
if [ -n "$baseline" ]; then
  tree=$PWD/build-bench/tree-$baseline
  [ -d "$tree" ] || git worktree add --detach "$tree" "$baseline" >/dev/null
  cmake -S "$tree" -B "$tree-build" -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=OFF \
    -DSWL_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$tree-build" -j"$(nproc)" --target swl_bench >/dev/null
  contenders+=(async@"$baseline" asio@"$baseline")
fi
workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
start_private_redis "$workdir"
"$SWL_BENCH" --print-script >"$workdir/swl.lua"
sha=$(redis-cli -p "$REDIS_PORT" script load "$(cat "$workdir/swl.lua")")
workload=(--port "$REDIS_PORT" --keys 10000 --limit 100 --window-ms 1000 --requests "$requests"
  --threads "$threads" --pipeline $((in_flight / threads)))

run() {
  if [ "$1" = ceiling ]; then
    rps=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n $((requests * 2)) -c 50 -r 10000 -P 16 -q \
      EVALSHA "$sha" 1 rb:__rand_int__ 1000000 100 1 2>/dev/null | tr '\r' '\n' |
      grep -o '[0-9.]* requests per second' | tail -1 | awk '{print $1}')
    echo "{\"mode\":\"ceiling\",\"decisions_per_sec\":${rps:-0},\"p99_us\":0}"
  elif [[ $1 == *@* ]]; then
    "$tree-build/bench/swl_bench" "${workload[@]}" --mode "${1%@*}" 2>/dev/null | tail -1 | sed "s/\"mode\":\"[a-z]*\"/\"mode\":\"$1\"/"
  else
    "$SWL_BENCH" "${workload[@]}" --mode "$1" 2>/dev/null | tail -1
  fi
}

for round in $(seq "$rounds"); do
  for i in "${!contenders[@]}"; do
    run "${contenders[$(((i + round) % ${#contenders[@]}))]}" | sed "s/^{/{\"round\":$round,/"
  done
done | python3 -c '
import sys, json, statistics as st
threads, in_flight = int(sys.argv[1]), int(sys.argv[2])
rows = [json.loads(line) for line in sys.stdin if line.strip()]
ceiling = {r["round"]: r["decisions_per_sec"] for r in rows if r["mode"] == "ceiling"}
names = {"ceiling": "redis-benchmark -c 50 -P 16 (the ceiling)",
         "raw": "swl_bench --mode raw (bare hiredis)",
         "async": "swl_bench --mode async (libevent limiter)",
         "asio": "swl_bench --mode asio (Asio limiter)",
         "asio-raw": "swl_bench --mode asio-raw (bare hiredis on Asio)"}
base_names = list(names)
modes = base_names + sorted({r["mode"] for r in rows} - set(names), key=lambda m: base_names.index(m.split("@")[0]))
for mode in modes[len(names):]:
    names[mode] = "swl_bench --mode %s at %s" % tuple(mode.split("@"))
print("%d in flight: %d thread(s) x %d, %d rounds" % (in_flight, threads, in_flight // threads, len(ceiling)))
print()
best_ceiling = max(ceiling.values())
print("| contender | decisions/s (median) | / ceiling (median of rounds) | best decisions/s | best / best ceiling | p99 us (median) | client CPU us per decision (median) |")
print("|---|--:|--:|--:|--:|--:|--:|")
for mode in modes:
    runs = [r for r in rows if r["mode"] == mode]
    ratios = [r["decisions_per_sec"] / ceiling[r["round"]] for r in runs]
    best = max(r["decisions_per_sec"] for r in runs)
    client = mode != "ceiling" and all("cpu_us_per_decision" in r for r in runs)
    print("| %s | %.0f | %.3f | %.0f | %.3f | %s | %s |" % (names[mode], st.median(r["decisions_per_sec"] for r in runs),
          st.median(ratios), best, best / best_ceiling,
          "" if mode == "ceiling" else "%.1f" % st.median(r["p99_us"] for r in runs),
          "%.2f" % st.median(r["cpu_us_per_decision"] for r in runs) if client else ""))
cpu = {(r["mode"], r["round"]): r["cpu_us_per_decision"] for r in rows if "cpu_us_per_decision" in r}
over_bare = [cpu[("asio", n)] / cpu[("asio-raw", n)] for n in ceiling if ("asio", n) in cpu and ("asio-raw", n) in cpu]
if over_bare:
    print()
    print("Asio limiter / bare hiredis on Asio, client CPU per decision: median %.3f (rounds: %s)" % (
          st.median(over_bare), ", ".join("%.3f" % ratio for ratio in over_bare)))
' "$threads" "$in_flight"
