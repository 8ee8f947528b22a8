#!/bin/bash
# A short device check of the framework paths (docs/gpu-validation.md): builds the package and
# the preload against the machine's torch, runs the Lightning script under gnnprof run (its
# training_step traced, its kernels by op), the Lightning probe's bisection
# (scripts/gpu_lightning_probe.py) and test_reports.py's PyG and Lightning tests.
#   scripts/gpu_frameworks.sh OUTDIR   (with .device-debs, as for gpu_validate.sh)
# GNNPROF_GPU_PROBE_ONLY=1: the probe's bisection alone, on the build-gpu that gpu_validate.sh made.
set -u
out=${1:?usage: gpu_frameworks.sh OUTDIR}
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
py=$(command -v python3)
step() { echo; echo "==== $* ($(date +%T))"; }
export LD_LIBRARY_PATH=/tmp/sysroot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
probe_only=${GNNPROF_GPU_PROBE_ONLY:-0}
if [ $probe_only = 0 ]; then
step build
mkdir -p /tmp/sysroot; for f in .device-debs/*.deb; do dpkg -x "$f" /tmp/sysroot; done
tp=$($py -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
timeout 90 cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="/tmp/sysroot/usr;$tp" \
  -DCUDAToolkit_ROOT=/usr/local/cuda -DGNNPROF_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$py" >/tmp/cfg.log 2>&1 || tail -20 /tmp/cfg.log
timeout 150 ninja -C build-gpu gnnprof_cli gnnprof_preload gnnprof_torch_observer gnnprof_cupti gnnprof_python >/tmp/build.log 2>&1
echo "ninja rc $?"; grep -E "error|FAILED" /tmp/build.log | head -20
fi
cli=$PWD/build-gpu/cli/gnnprof
if [ $probe_only = 0 ]; then
step Lightning on the GPU under gnnprof run
timeout 120 $cli run -o /tmp/l.json -- $py tests/python/scripts/lightning_mlp.py >/tmp/l.out 2>&1
echo "rc $?"; tail -3 /tmp/l.out
timeout 60 $cli report /tmp/l.json 2>&1 | sed -n '/== Line table/,/== Stages/p' | head -40
timeout 60 $cli report /tmp/l.json 2>&1 | sed -n '/== Diagnostics/,/== Transfers/p' | grep '^\[' | cut -c1-200
timeout 60 $cli report /tmp/l.json 2>&1 | sed -n '/== GPU kernels/,/== Materializations/p' | head -16
timeout 60 $cli report /tmp/l.json 2>&1 | grep '^Collectors' | cut -c1-900
cp /tmp/l.json "$out/lightning.json"
fi
step "Lightning probe: which of lightning_mlp.py's differences leaves training_step untraced"
# traced on the H200 with every flag (2026-11-28) while lightning_mlp.py was not: then the dump
# itself and the script run as it is (its end stats: framework, loop_packages, callbacks)
for flags in "--script tests/python/scripts/lightning_mlp.py" "--like-mlp --no-dump" "--like-mlp" "" \
             "--log" "--shuffle" "--deep" "--epochs 2" "--batches 60"; do
  timeout 90 $cli run -o /tmp/probe.json -- $py scripts/gpu_lightning_probe.py $flags >/tmp/probe.out 2>&1
  rc=$?
  traced=no; grep -q "^== end selected:.*training_step" /tmp/probe.out && traced=yes
  echo "[${flags:-defaults}] rc $rc, training_step traced: $traced"
  grep -A1 "^== training_step call 1" /tmp/probe.out | cut -c1-400; grep "^== end stats" /tmp/probe.out
  [ $traced = yes ] || grep -B3 -A30 "^== training_step call 1" /tmp/probe.out | grep "^ " | cut -c1-200
done
[ $probe_only = 1 ] && { step done; exit 0; }
step PyG and Lightning tests on this Python
pypath=/tmp/sysroot/usr/lib/python3/dist-packages; $py -c 'import pytest' 2>/dev/null && pypath=
xd=(); $py -c 'import xdist' 2>/dev/null && xd=(-p xdist -n 2)
PYTHONPATH=$pypath PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 GNNPROF_TEST_PYTHON=$py GNNPROF_CLI=$cli GNNPROF_PYTHON_DIR=$PWD/build-gpu/python \
  PYTHONDONTWRITEBYTECODE=1 timeout 150 $py -m pytest -q -p no:cacheprovider --tb=short -rfEs -W ignore ${xd[@]+"${xd[@]}"} \
  tests/python/test_reports.py -k "pyg or lightning" 2>&1 | tail -40
step done
