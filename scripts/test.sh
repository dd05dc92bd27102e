#!/usr/bin/env bash
# Installs what is missing, builds swl with its tests, examples and benchmarks, and runs the whole suite
# with ctest. Every test starts its own redis-server on a free loopback port.
#
#   bash scripts/test.sh          g++, -Wall -Wextra -Wpedantic -Werror
#   bash scripts/test.sh asan     clang, AddressSanitizer + UndefinedBehaviorSanitizer
#   bash scripts/test.sh tsan     clang, ThreadSanitizer
#   bash scripts/test.sh hiredis1 g++, against hiredis 1.2.0 built from ../shared/deps (skipped, saying so,
#                                 when that tarball is not there, as in a user's clone)
#   bash scripts/test.sh servers  the same suite (the hiredis1 build, TLS included, when it is there; else the
#                                 default build) against redis 7.4.1 and valkey 8.0.1, each built once from
#                                 ../shared/deps (a server whose tarball is not there is skipped, saying so)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

config=${1:-default}
# Runs the suite built in $1 with ctest, with the ctest arguments after $2; when it fails, and
# SWL_FAILED_TESTS names a file (.ci/run sets it), appends $2 and the names of the failed tests to it.
# SWL_TEST_JOBS tests run at once (2 unless set).
run_suite() {
  local build=$1 label=$2
  shift 2
  (cd "$build" && ctest --output-on-failure -j"${SWL_TEST_JOBS:-2}" "$@") && return 0
  if [ -n "${SWL_FAILED_TESTS:-}" ]; then
    mkdir -p "$(dirname "$SWL_FAILED_TESTS")"
    { echo "failed in $label:"; sed 's/^/  /' "$build/Testing/Temporary/LastTestsFailed.log"; } >>"$SWL_FAILED_TESTS"
  fi
  return 1
}
# Unpacks ../shared/deps/$1.tar.gz into $2 and runs make, then make install, each with the make arguments
# after those two; the output goes to $2.log, and its end to stderr when make fails.
make_from_deps() {
  local tarball=$1 source=$2
  shift 2
  rm -rf "$source" && mkdir -p "$source"
  tar -xzf "../shared/deps/$tarball.tar.gz" -C "$source" --strip-components=1 || return 1
  { make -C "$source" -j"$(nproc)" "$@" && make -C "$source" "$@" install; } >"$source.log" 2>&1 ||
    { tail -30 "$source.log" >&2; return 1; }
}

# Builds hiredis $1 with OpenSSL into build-hiredis1/hiredis-$1 (once) and prints where.
build_hiredis() {
  local prefix=$PWD/build-hiredis1/hiredis-$1
  # hiredis's Makefile takes LIBRARY_PATH from the environment as its install libdir.
  if [ ! -f "$prefix/lib/pkgconfig/hiredis_ssl.pc" ]; then
    # (errexit does not reach into $(...): each failure returns by hand)
    make_from_deps "hiredis-$1" "$PWD/build-hiredis1/source-$1" USE_SSL=1 PREFIX="$prefix" LIBRARY_PATH=lib || return 1
  fi
  echo "$prefix"
}

# Builds server $1 (redis or valkey) $2 with TLS into build-servers/$1-$2 (once) and prints its bin
# directory, where redis-server and redis-cli start it: the name the test harness runs. The suite tests
# what the server does (scripts, replication, Cluster, Sentinel, TLS), not its allocator or its speed:
# built with libc's malloc at -O1 rather than jemalloc at -O3 with LTO, each server builds in about 40 s
# instead of 150 s on CI's two cores.
build_server() {
  local name=$1 version=$2 prefix=$PWD/build-servers/$1-$2 tool
  if [ ! -x "$prefix/bin/redis-server" ]; then
    make_from_deps "$name-$version" "$PWD/build-servers/source-$name-$version" BUILD_TLS=yes MALLOC=libc OPTIMIZATION=-O1 \
      PREFIX="$prefix" || return 1
    for tool in server cli; do
      [ -e "$prefix/bin/redis-$tool" ] || ln -s "$name-$tool" "$prefix/bin/redis-$tool"
    done
  fi
  echo "$prefix/bin"
}

if [ "$config" = servers ]; then
  install_missing g++ make pkg-config libssl-dev openssl
  suite=build-hiredis1/build
  if [ -f "$suite/CTestTestfile.cmake" ]; then
    export LD_LIBRARY_PATH=$PWD/build-hiredis1/hiredis-1.2.0/lib
  else
    echo "scripts/test.sh servers: no hiredis 1.x build (bash scripts/test.sh hiredis1); using the default build, without TLS"
    suite=build-default
    [ -f "$suite/CTestTestfile.cmake" ] || bash scripts/test.sh default
  fi
  status=0
  for server in redis-7.4.1 valkey-8.0.1; do
    if [ ! -f "../shared/deps/$server.tar.gz" ]; then
      echo "scripts/test.sh servers: ../shared/deps/$server.tar.gz is not here; skipping the run against $server"
      continue
    fi
    started=$SECONDS
    bin=$(build_server "${server%-*}" "${server##*-}")
    echo "built $server in $((SECONDS - started)) s: $("$bin/redis-server" --version)"
    started=$SECONDS
    # what does not talk to a server (the packages, the Lua part, contracts, the floors, fuzzers) ran in the
    # other stages
    PATH="$bin:$PATH" run_suite "$suite" "the suite against $server" -E '^(package|lua|contract|floor|fuzz)[.]|^the module.s (names|sums)' || status=1
    echo "the suite against $server took $((SECONDS - started)) s"
  done
  exit $status
fi

if [ "$config" = hiredis1 ]; then
  if [ ! -f ../shared/deps/hiredis-1.2.0.tar.gz ]; then
    echo "scripts/test.sh hiredis1: ../shared/deps/hiredis-1.2.0.tar.gz is not here; skipping the run against hiredis 1.x"
    exit 0
  fi
  install_missing g++ make libssl-dev openssl
  # hiredis 1.0.2: its hiredis.pc names only <prefix>/include/hiredis; swl must still see this hiredis's
  # header, not Debian's 0.14 one. A build check: configure, then compile the TLS test and an example.
  if [ -f ../shared/deps/hiredis-1.0.2.tar.gz ]; then
    prefix=$(build_hiredis 1.0.2)
    PKG_CONFIG_PATH=$prefix/lib/pkgconfig cmake -S . -B build-hiredis1/build-1.0.2 -DCMAKE_BUILD_TYPE=None \
      -DSWL_BUILD_TESTS=ON -DSWL_BUILD_EXAMPLES=ON | grep 'swl: hiredis'
    cmake --build build-hiredis1/build-1.0.2 -j"$(nproc)" --target swl_tls_tests basic
    echo "hiredis 1.0.2: swl and its TLS tests build"
  else
    echo "scripts/test.sh hiredis1: ../shared/deps/hiredis-1.0.2.tar.gz is not here; skipping the 1.0.2 build check"
  fi
  prefix=$(build_hiredis 1.2.0)
  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
  export LD_LIBRARY_PATH=$prefix/lib
  echo "building and testing against hiredis $(pkg-config --modversion hiredis) in $prefix"
fi
# The documentation's C++ blocks are built once, in the default build, and the benchmarks once, in the
# hiredis-1.x build (which CI runs; bench/*.sh build their own, optimized, and ratelimit_service, which
# needs swl-ratelimit, is bench/ratelimit_service.sh's alone): built again they find nothing
# new, and cost CI minutes. The README's command leaves the benchmarks out for the same reason: they are
# no test, and compiling them took about a minute of its eight. The hiredis-1.x build is
# unoptimized for the same reason: the optimizer is the default build's to exercise, and -O2 cost that
# build about 5 of CI's minutes. The g++ builds carry no debug information (-g made each test file take
# half as long again to compile, at -O2 and at -O0, and CI reads no core files); the sanitized builds
# keep theirs, for the stack traces in their reports.
built_once=(-DSWL_BUILD_BENCHMARKS=OFF -DSWL_CHECK_DOC_BLOCKS=OFF)
# swl-ratelimit (ratelimit/) is a program beside the library: the default build and ASan+UBSan test it
# (its YAML parser on random text, its gRPC calls); built under TSan and against hiredis 1.x too, it
# would add about two minutes each to CI, and those runs test no code of its own.
without_server=(-DSWL_BUILD_RATELIMIT=OFF)
case "$config" in
  default) compiler=g++ packages=(g++) settings=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" -DSWL_BUILD_BENCHMARKS=OFF -DSWL_CHECK_DOC_BLOCKS=ON) ;;
  asan) compiler=clang++ packages=(clang libclang-rt-14-dev) settings=(-DCMAKE_BUILD_TYPE=Debug -DSWL_SANITIZE=address,undefined -DSWL_BUILD_FUZZERS=ON "${built_once[@]}") ;;
  tsan) compiler=clang++ packages=(clang libclang-rt-14-dev) settings=(-DCMAKE_BUILD_TYPE=Debug -DSWL_SANITIZE=thread "${built_once[@]}" "${without_server[@]}") ;;
  hiredis1) compiler=g++ packages=(g++) settings=(-DCMAKE_BUILD_TYPE=None -DSWL_LUA_OPERATIONS=100000 -DSWL_ORACLE_DECISIONS=100000 -DSWL_MODULE_DECISIONS=100000 -DSWL_BUILD_BENCHMARKS=ON -DSWL_CHECK_DOC_BLOCKS=OFF "${without_server[@]}") ;;
  *) echo "usage: $0 [default|asan|tsan|hiredis1|servers]" >&2; exit 2 ;;
esac
install_missing "${packages[@]}" make cmake pkg-config dpkg-dev libhiredis-dev libevent-dev libcpp-httplib-dev prometheus-cpp-dev libhowardhinnant-date-dev catch2 redis-server redis-tools \
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc iproute2 lua5.1 liblua5.1-0-dev libasio-dev libboost1.81-dev libyaml-dev \
  clang-tidy  # the sizes of ratelimit/'s files and functions (tests/sizes)

build=build-$config
[ "$config" = hiredis1 ] && build=build-hiredis1/build
# The module (module/) builds against the module header of a Redis source tree, which Debian's redis-server
# does not ship: redis 7.4.1's from ../shared/deps, in the builds whose suites CI runs against every server
# (default: Debian's 7.0; hiredis1, which the servers stage reuses: 7.4.1 and valkey 8.0.1). A clone
# without ../shared skips the module and its differential test, saying so; the sanitized builds skip it
# too (the module runs inside redis-server, which no sanitizer watches).
module=()
if [ "$config" = default ] || [ "$config" = hiredis1 ]; then
  if module_source=$(module_header_tree); then
    module=(-DSWL_MODULE_SOURCE="$module_source")
  else
    echo "scripts/test.sh: ../shared/deps/redis-7.4.1.tar.gz is not here; the module swl_native and its differential test are skipped"
  fi
fi
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="$compiler" "${settings[@]}" "${module[@]}" \
  -DSWL_BUILD_TESTS=ON -DSWL_BUILD_EXAMPLES=ON
cmake --build "$build" -j"$(nproc)"
# Most of the default suite's tests wait on the redis-servers they start, so a third test at once keeps
# both of CI's cores busy: 155-164 s where two at once take 240-250 s, all 544 tests passing each time.
# The sanitized and unoptimized builds use the cores themselves, and keep to two.
[ "$config" = default ] && export SWL_TEST_JOBS=${SWL_TEST_JOBS:-3}
run_suite "$build" "the $config suite"
