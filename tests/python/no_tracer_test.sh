#!/bin/bash
# The Python package built without its line tracer (-DGNNPROF_PYTHON_LINES=OFF: python/src/tracer_none.c),
# here against another CPython found here (pyenv's 3.10, or GNNPROF_OTHER_PYTHON): it records
# stages, steps and prefetch, says once on stderr and in the collector list that lines are not
# traced, and leaves the script's output and exit code alone. Exits 77 (skipped) where no such
# Python with its headers is found.
# usage: no_tracer_test.sh GNNPROF_CLI BUILD_PYTHON_DIR SOURCE_DIR
set -u
cli=$1 built=$2 src=$3
source "$src/tests/app/lib.sh"

other=""
for c in ${GNNPROF_OTHER_PYTHON:-} "$HOME"/.pyenv/versions/3.10*/bin/python3 $(command -v python3.10 2>/dev/null); do
  [ -x "$c" ] || continue
  inc=$("$c" -c 'import sys, sysconfig
if sys.version_info[:2] != (3, 10): sys.exit(1)
print(sysconfig.get_paths()["include"])' 2>/dev/null) || continue
  [ -f "$inc/Python.h" ] && { other=$c; break; }
done
[ -n "$other" ] || { echo "skipped: no CPython 3.10 with its headers here"; exit 77; }
echo "other Python: $other ($("$other" -c 'import sys; print(sys.version.split()[0])'))"

pkg=$tmp/pkg/gnnprof
mkdir -p "$pkg"
cp -r "$src"/python/gnnprof/. "$pkg"/
cp "$built"/gnnprof/_paths.py "$pkg"/
suffix=$("$other" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
cc -shared -fPIC -O1 -std=c11 -DGNNPROF_PY_LINES=0 -I"$inc" -I"$src/instrument/src" \
  "$src/python/src/module.c" "$src/python/src/tracer_none.c" -o "$pkg/_native$suffix" -ldl -lpthread
check "the package's native module builds without the tracer" '[ -f "$pkg/_native$suffix" ]'

script=$src/tests/python/scripts/no_tracer_loop.py
want=$("$other" -c 'print("total", sum(sum(i * i for i in range(2000 + b)) + sum(range(1000)) for b in range(20)))')

# Imported on its own: the package starts a session itself.
GNNPROF_OUTPUT=$tmp/own.json PYTHONPATH=$tmp/pkg "$other" "$script" >"$tmp/own.out" 2>"$tmp/own.err"
rc=$?
check "imported on its own: exit code kept (3)" '[ $rc -eq 3 ]'
check "imported on its own: output kept" '[ "$(cat "$tmp/own.out")" = "$want" ]'
check "one stderr line says lines are not traced" '[ "$(grep -c "python-lines: not traced" "$tmp/own.err")" = 1 ]'

# Under gnnprof run, the package from GNNPROF_PYTHON_DIR joins the injected library's session.
GNNPROF_PYTHON_DIR=$tmp/pkg "$cli" run -o "$tmp/run.json" -- "$other" "$script" >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
check "under gnnprof run: exit code kept (3)" '[ $rc -eq 3 ]'
check "under gnnprof run: output kept" '[ "$(cat "$tmp/run.out")" = "$want" ]'
for f in own run; do
  check "$f: stages recorded" '[ "$(json "$tmp/$f.json" "sum(s[\"hits\"] for s in p[\"stages\"] if s[\"name\"] in (\"sample\", \"forward\"))")" = 40 ]'
  check "$f: 20 iterations" '[ "$(json "$tmp/$f.json" "sum(1 for i in p[\"iterations\"] if i[\"complete\"])")" -ge 19 ]'
  check "$f: python-lines off, with the reason" \
    '[ "$(json "$tmp/$f.json" "[c[\"enabled\"] and 1 or (\"no line tracer\" in c[\"reason\"]) for c in p[\"collectors\"] if c[\"name\"] == \"python-lines\"]")" = "[True]" ]'
  check "$f: no line table" '[ "$(json "$tmp/$f.json" "len(p[\"lines\"])")" = 0 ]'
done
[ $fail -eq 0 ] || { cat "$tmp"/*.err; }
exit $fail
