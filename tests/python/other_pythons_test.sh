#!/bin/bash
# The line tracers on the CPythons other than the build's, and -DGNNPROF_EXTRA_PYTHONS: every
# CPython >= 3.10 found here (pyenv's, or those named in GNNPROF_OTHER_PYTHONS) whose ABI differs
# from the build's gets the package's native module from a scratch configure of this source with
# GNNPROF_EXTRA_PYTHONS naming them all (the tracer of its version: 3.10 and 3.11 tracer.c, a
# PEP 523 hook over their frames; 3.12 and newer tracer_monitor.c, sys.monitoring); then the
# line and report tests (tests/python/test_python_lines.py, test_reports.py) run with each as
# the traced Python; the cases needing torch skip where it has none. The test driver stays
# Debian's Python (pytest). Exits 77 (skipped) where no such Python is found.
# usage: other_pythons_test.sh GNNPROF_CLI BUILD_PYTHON_DIR SOURCE_DIR
set -u
cli=$1 built=$2 src=$3
source "$src/tests/app/lib.sh"

build_tag=$(/usr/bin/python3 -c 'import sys; print("%d%d" % sys.version_info[:2])')
pythons=() tags=()
for c in ${GNNPROF_OTHER_PYTHONS:-} "$HOME"/.pyenv/versions/3.1[0-9]*/bin/python3; do
  [ -x "$c" ] || continue
  tag=$("$c" -c 'import sys, sysconfig, os
ok = sys.version_info >= (3, 10) and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
print("%d%d" % sys.version_info[:2] if ok else "")' 2>/dev/null) || continue
  [ -n "$tag" ] && [ "$tag" != "$build_tag" ] || continue
  case " ${tags[*]} " in *" $tag "*) continue ;; esac # one per ABI
  pythons+=("$c") tags+=("$tag")
done
[ ${#pythons[@]} -gt 0 ] || { echo "skipped: no other CPython 3.10 or newer with its headers here"; exit 77; }

# The native modules, as a build with -DGNNPROF_EXTRA_PYTHONS makes them (only those targets).
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
extra=$(IFS=';'; echo "${pythons[*]}")
cmake -S "$src" -B "$tmp/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DGNNPROF_WITH_TORCH=OFF -DGNNPROF_WITH_CUDA=OFF \
  -DGNNPROF_BUILD_TESTS=OFF -DGNNPROF_BUILD_BENCH=OFF -DGNNPROF_BUILD_SAMPLES=OFF "-DGNNPROF_EXTRA_PYTHONS=$extra" -DCMAKE_C_FLAGS=-Werror \
  >"$tmp/configure.log" 2>&1
targets=(); for t in "${tags[@]}"; do targets+=(gnnprof_python_native_py$t); done
cmake --build "$tmp/build" --target "${targets[@]}" >"$tmp/build.log" 2>&1
rc=$?
check "GNNPROF_EXTRA_PYTHONS builds ${targets[*]}" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || cat "$tmp/configure.log" "$tmp/build.log"

for i in "${!pythons[@]}"; do
  c=${pythons[$i]}
  version=$("$c" -c 'import sys; print(sys.version.split()[0])')
  suffix=$("$c" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  echo "== CPython $version ($c)"
  # Debian's Python imports the package in-process too: the build's module stays beside the new one.
  pkg=$tmp/$version/gnnprof
  mkdir -p "$pkg"
  cp -r "$built"/gnnprof/. "$pkg"/
  cp "$tmp/build/python/gnnprof/_native$suffix" "$pkg"/ 2>/dev/null
  check "$version: its native module was built" '[ -f "$pkg/_native$suffix" ]'
  [ -f "$pkg/_native$suffix" ] || continue
  GNNPROF_TEST_PYTHON=$c GNNPROF_PYTHON_DIR=$tmp/$version GNNPROF_CLI=$cli PYTHONDONTWRITEBYTECODE=1 \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider "$src/tests/python/test_python_lines.py" \
    "$src/tests/python/test_reports.py" >"$tmp/$version.log" 2>&1
  rc=$?
  tail -3 "$tmp/$version.log"
  check "$version: the line tests pass" '[ $rc -eq 0 ]'
  [ $rc -eq 0 ] || cat "$tmp/$version.log"
done
exit $fail
