#!/usr/bin/env bash
# Installs what is missing, builds swl with its tests, examples and benchmarks, and runs the whole suite
# with ctest. Every test starts its own redis-server on a free loopback port.
#
#   bash scripts/test.sh          g++, -Wall -Wextra -Wpedantic -Werror
#   bash scripts/test.sh asan     clang, AddressSanitizer + UndefinedBehaviorSanitizer
#   bash scripts/test.sh tsan     clang, ThreadSanitizer
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

config=${1:-default}
case "$config" in
  default) compiler=g++ packages=(g++) settings=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  asan) compiler=clang++ packages=(clang libclang-rt-14-dev) settings=(-DCMAKE_BUILD_TYPE=Debug -DSWL_SANITIZE=address,undefined -DSWL_BUILD_FUZZERS=ON) ;;
  tsan) compiler=clang++ packages=(clang libclang-rt-14-dev) settings=(-DCMAKE_BUILD_TYPE=Debug -DSWL_SANITIZE=thread) ;;
  *) echo "usage: $0 [default|asan|tsan]" >&2; exit 2 ;;
esac
install_missing "${packages[@]}" make cmake pkg-config libhiredis-dev libevent-dev libcpp-httplib-dev prometheus-cpp-dev catch2 redis-server redis-tools

build=build-$config
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="$compiler" "${settings[@]}" \
  -DSWL_BUILD_TESTS=ON -DSWL_BUILD_EXAMPLES=ON -DSWL_BUILD_BENCHMARKS=ON
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j2
