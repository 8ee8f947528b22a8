#!/usr/bin/env bash
# cmake --install into a fresh prefix, then configure, build and run an outside project that
# says find_package(gnnprof REQUIRED).  usage: install_consumer_test.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/gnnprof/gnnprof.h"
test -f "$tmp/prefix/lib/cmake/gnnprof/gnnprofConfig.cmake"
test -x "$tmp/prefix/bin/gnnprof"
gen=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
cmake -S "$src/tests/consumer" -B "$tmp/build" -G "$gen" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" >/dev/null
GNNPROF_QUIET=1 "$tmp/build/consumer"
"$tmp/prefix/bin/gnnprof" --version
echo "install + find_package consumer: ok"
