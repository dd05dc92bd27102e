#!/usr/bin/env bash
# Redis's instructions per EVALSHA of the log's script at this checkout and at another revision, on the
# same traces, counted by callgrind (bench/instructions.py): exact where INFO commandstats' microseconds
# move by 10-20% from run to run. Each trace's ratio is this checkout's count over the other's.
#
#   bash bench/instructions.sh [REVISION=0d90a70] [TRACES="cost1 rejected weighted deep"]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
revision=${1:-0d90a70}
traces=${2:-cost1 rejected weighted deep}
install_missing g++ make cmake pkg-config libhiredis-dev redis-server valgrind python3
work=$PWD/build-instructions
mkdir -p "$work"
# swl_scripts prints each script as swl sends it; built here and in a worktree at the revision.
scriptOf() {
  local tree=$1 build=$2
  cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=ON >/dev/null
  cmake --build "$build" -j"$(nproc)" --target swl_scripts >/dev/null
  "$build/examples/swl_scripts" sliding_window
}
scriptOf . "$work/here" >"$work/here.lua"
if [ ! -d "$work/tree-$revision" ]; then git worktree add --detach "$work/tree-$revision" "$revision" >/dev/null; fi
scriptOf "$work/tree-$revision" "$work/build-$revision" >"$work/$revision.lua"
echo "| trace | $revision: instructions per call | here | here / $revision |"
echo "|---|--:|--:|--:|"
for trace in $traces; do
  before=$(python3 bench/instructions.py "$work/$revision.lua" "$trace")
  now=$(python3 bench/instructions.py "$work/here.lua" "$trace")
  echo "| $trace | $before | $now | $(python3 -c "print('%.3f' % ($now / $before))") |"
done
