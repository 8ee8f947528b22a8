#!/usr/bin/env bash
# cmake --install into a fresh prefix, then configure, build and run an outside project that
# says find_package(gnnprof REQUIRED); with PYTHON, the installed Python package as well: it finds
# the prefix's CLI and preload wherever the prefix is, and `python3 -m gnnprof` traces a script.
# usage: install_consumer_test.sh BUILD_DIR SOURCE_DIR [PYTHON]
set -eu
build=$1 src=$2 py=${3:-}
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
if [ -n "$py" ]; then
  site=$tmp/prefix/lib/python3/dist-packages
  ls "$site"/gnnprof/__pycache__/__init__.*.pyc >/dev/null  # byte-compiled in the prefix given at install time
  (cd "$tmp" && GNNPROF_ENABLED=0 PREFIX="$(realpath "$tmp/prefix")" PYTHONPATH=$site "$py" -c 'import os, gnnprof._paths as p
assert p.PRELOAD.startswith(os.environ["PREFIX"]) and os.path.exists(p.PRELOAD), p.PRELOAD
assert p.CLI.startswith(os.environ["PREFIX"]) and os.access(p.CLI, os.X_OK), p.CLI')
  printf 'def work(n):\n    t = 0\n    for i in range(n):\n        t += i\n    return t\n\nprint(work(1000))\n' > "$tmp/work.py"
  (cd "$tmp" && PYTHONPATH=$site GNNPROF_QUIET=1 "$py" -m gnnprof -o "$tmp/work.json" --lines work.py:work work.py) | grep -qx 499500
  "$py" -c 'import json, sys; p = json.load(open(sys.argv[1]))
assert {l["function"] for l in p["lines"]} == {"work"}, p["lines"]' "$tmp/work.json"
  echo "installed Python package: ok"
fi
echo "install + find_package consumer: ok"
