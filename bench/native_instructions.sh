#!/usr/bin/env bash
# What Redis executes per decision, counted in instructions (callgrind's Ir), the script's against the
# module's: deterministic where this machine's timings move by a fifth from run to run. Each command runs
# alone on a private redis-server under callgrind, sent by redis-benchmark as bench/throughput.sh sends
# it (50 clients, 16 in flight each, Redis's clock, limit 100), on 1,000 keys and a 5 s window where
# throughput.sh has 10,000 keys and 1 s: callgrind runs the server about fifty times slower, and so a key's
# set holds about what it holds there. PING is the floor: what reading, parsing and answering a request
# costs, whatever it asks.
#
#   bash bench/native_instructions.sh [calls=100000]
#
# (bench/instructions.sh counts the script alone against another revision of it, on traces of its own.)
#
# "whole server" is every instruction the server's event loop ran (aeMain: reading, parsing, the
# command, answering, and its timers), divided by the calls; "the command" only those inside Redis's call()
# (the command itself, replication included).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
calls=${1:-100000}

install_missing valgrind
build_swl_bench
if [ -z "$SWL_NATIVE_MODULE" ]; then
  echo "no module built (../shared/deps/redis-7.4.1.tar.gz is not here): nothing to compare" >&2
  exit 0
fi
workdir=$(mktemp -d)
trap 'stop_private_redis; rm -rf "$workdir"' EXIT
"$SWL_BENCH" --print-script >"$workdir/swl.lua"

results="$workdir/results"
measure() {  # label, command words before the call's arguments (SCRIPT: the script's EVALSHA)
  local label=$1 out="$workdir/callgrind.$1" words
  shift
  REDIS_LAUNCHER=(valgrind --tool=callgrind --callgrind-out-file="$out" --log-file="$out.log"
    --collect-atstart=no --toggle-collect=aeMain)
  start_private_redis "$workdir" --loadmodule "$SWL_NATIVE_MODULE"
  REDIS_LAUNCHER=()
  words=("$@")
  if [ "${words[0]}" = SCRIPT ]; then
    words=(EVALSHA "$(redis-cli -p "$REDIS_PORT" script load "$(cat "$workdir/swl.lua")")" 1)
  fi
  if [ "${words[0]}" = PING ]; then
    redis-benchmark -p "$REDIS_PORT" -c 50 -P 16 -n "$calls" -q PING >/dev/null 2>&1
  else
    redis-benchmark -p "$REDIS_PORT" -c 50 -P 16 -n "$calls" -r 1000 -q \
      "${words[@]}" bench:k__rand_int__ 5000000 100 1 '' m__rand_int__ 5000 0 >/dev/null 2>&1
  fi
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  wait "$REDIS_PID" 2>/dev/null || true
  REDIS_PIDS=()
  echo "$label $out" >>"$results"
}

echo "private redis-servers under callgrind, $calls calls each: PING, the script, the module" >&2
measure ping PING
measure script SCRIPT
measure module SWL.DECIDE

python3 - "$results" "$calls" <<'PY'
import re, subprocess, sys
calls = int(sys.argv[2])
def instructions(profile, inclusive):
    text = subprocess.run(["callgrind_annotate", "--inclusive=" + inclusive, profile],
                          capture_output=True, text=True, check=True).stdout
    pattern = r"^\s*([\d,]+) .*PROGRAM TOTALS" if inclusive == "no" else r"^\s*([\d,]+) \([^)]*\)\s+[^\s:]*:call \["
    return int(re.search(pattern, text, re.M).group(1).replace(",", ""))
rows = {}
for line in open(sys.argv[1]):
    label, profile = line.split()
    rows[label] = (instructions(profile, "no") / calls, instructions(profile, "yes") / calls)
names = {"ping": "PING (the floor)", "script": "EVALSHA, the script", "module": "SWL.DECIDE, the module"}
print("| command | Ir per call, whole server | Ir per call, the command |")
print("|---|---:|---:|")
for label in ("ping", "script", "module"):
    print("| %s | %.0f | %.0f |" % (names[label], rows[label][0], rows[label][1]))
print()
print("| ratio | whole server | the command |")
print("|---|---:|---:|")
print("| module / script | %.3f | %.3f |" % tuple(rows["module"][i] / rows["script"][i] for i in (0, 1)))
print("| the ceiling these allow: script / module | %.2fx | - |" % (rows["script"][0] / rows["module"][0]))
PY
