#!/bin/bash
# The line tracer on CPython 3.12 and newer (python/src/tracer_monitor.c, sys.monitoring): the
# package's native module built for each such Python found here (pyenv's, or those named in
# GNNPROF_MONITOR_PYTHONS), then the line tests (tests/python/test_python_lines.py) run with
# that Python as the traced one; the cases needing torch skip where it has none. The test
# driver stays Debian's Python (pytest). Exits 77 (skipped) where no such Python is found.
# usage: monitor_test.sh GNNPROF_CLI BUILD_PYTHON_DIR SOURCE_DIR
set -u
cli=$1 built=$2 src=$3
source "$src/tests/app/lib.sh"

found=0
for c in ${GNNPROF_MONITOR_PYTHONS:-} "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
  [ -x "$c" ] || continue
  inc=$("$c" -c 'import sys, sysconfig
if sys.version_info < (3, 12): sys.exit(1)
print(sysconfig.get_paths()["include"])' 2>/dev/null) || continue
  [ -f "$inc/Python.h" ] || continue
  found=1
  version=$("$c" -c 'import sys; print(sys.version.split()[0])')
  echo "== CPython $version ($c)"
  # Debian's Python imports the package in-process too: the build's module stays beside the new one.
  pkg=$tmp/$version/gnnprof
  mkdir -p "$pkg"
  cp -r "$built"/gnnprof/. "$pkg"/
  suffix=$("$c" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  cc -shared -fPIC -O2 -std=c11 -Wall -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
    -I"$inc" -I"$src/instrument/src" "$src/python/src/module.c" "$src/python/src/tracer_monitor.c" \
    "$src/python/src/tracer_common.c" -o "$pkg/_native$suffix" -ldl -lpthread
  check "$version: the native module builds with the sys.monitoring tracer" '[ -f "$pkg/_native$suffix" ]'
  [ -f "$pkg/_native$suffix" ] || continue
  GNNPROF_TEST_PYTHON=$c GNNPROF_PYTHON_DIR=$tmp/$version GNNPROF_CLI=$cli PYTHONDONTWRITEBYTECODE=1 \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider "$src/tests/python/test_python_lines.py" \
    "$src/tests/python/test_reports.py" >"$tmp/$version.log" 2>&1
  rc=$?
  tail -3 "$tmp/$version.log"
  check "$version: the line tests pass" '[ $rc -eq 0 ]'
  [ $rc -eq 0 ] || cat "$tmp/$version.log"
done
[ $found -eq 1 ] || { echo "skipped: no CPython 3.12 or newer with its headers here"; exit 77; }
exit $fail
