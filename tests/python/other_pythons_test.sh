#!/bin/bash
# The line tracers on the CPythons other than the build's: the package's native module built for
# each CPython found here (pyenv's, or those named in GNNPROF_OTHER_PYTHONS) with the tracer of
# its version (3.10 and 3.11: python/src/tracer.c, a PEP 523 hook over their frames; 3.12 and
# newer: tracer_monitor.c, sys.monitoring), then the line and report tests
# (tests/python/test_python_lines.py, test_reports.py) run with that Python as the traced one;
# the cases needing torch skip where it has none. The test driver stays Debian's Python
# (pytest). Exits 77 (skipped) where no such Python is found.
# usage: other_pythons_test.sh GNNPROF_CLI BUILD_PYTHON_DIR SOURCE_DIR
set -u
cli=$1 built=$2 src=$3
source "$src/tests/app/lib.sh"

build_minor=$(/usr/bin/python3 -c 'import sys; print(sys.version_info[1])')
found=0
for c in ${GNNPROF_OTHER_PYTHONS:-} "$HOME"/.pyenv/versions/3.1[0-9]*/bin/python3; do
  [ -x "$c" ] || continue
  minor=$("$c" -c 'import sys; print(sys.version_info[1] if sys.version_info[0] == 3 else 0)' 2>/dev/null) || continue
  [ "$minor" -ge 10 ] && [ "$minor" != "$build_minor" ] || continue
  inc=$("$c" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null) || continue
  [ -f "$inc/Python.h" ] || continue
  found=1
  version=$("$c" -c 'import sys; print(sys.version.split()[0])')
  if [ "$minor" -ge 12 ]; then tracer=tracer_monitor.c; else tracer=tracer.c; fi
  echo "== CPython $version ($c): $tracer"
  # Debian's Python imports the package in-process too: the build's module stays beside the new one.
  pkg=$tmp/$version/gnnprof
  mkdir -p "$pkg"
  cp -r "$built"/gnnprof/. "$pkg"/
  suffix=$("$c" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  cc -shared -fPIC -O2 -std=c11 -Wall -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
    -I"$inc" -I"$src/instrument/src" "$src/python/src/module.c" "$src/python/src/$tracer" \
    "$src/python/src/tracer_common.c" -o "$pkg/_native$suffix" -ldl -lpthread
  check "$version: the native module builds with $tracer" '[ -f "$pkg/_native$suffix" ]'
  [ -f "$pkg/_native$suffix" ] || continue
  GNNPROF_TEST_PYTHON=$c GNNPROF_PYTHON_DIR=$tmp/$version GNNPROF_CLI=$cli PYTHONDONTWRITEBYTECODE=1 \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider "$src/tests/python/test_python_lines.py" \
    "$src/tests/python/test_reports.py" >"$tmp/$version.log" 2>&1
  rc=$?
  tail -3 "$tmp/$version.log"
  check "$version: the line tests pass" '[ $rc -eq 0 ]'
  [ $rc -eq 0 ] || cat "$tmp/$version.log"
done
[ $found -eq 1 ] || { echo "skipped: no other CPython 3.10 or newer with its headers here"; exit 77; }
exit $fail
