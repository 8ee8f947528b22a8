#!/bin/bash
# The GPU validation run (docs/gpu-validation.md), on a machine with a CUDA device, CUDA's
# toolkit, cmake, ninja and a CUDA PyTorch but no package registry. Run from the repo root with
# the .debs of scripts/gpu_fetch_debs.sh in .device-debs:
#   scripts/gpu_validate.sh OUTDIR
# Builds what the gpu checks need against that machine's torch, runs `ctest -L gpu`, the Python
# sample with --device cuda under gnnprof run (with CUPTI and without), a PyG and a Lightning
# script where the machine has them, the Python tests on the machine's Python unless
# GNNPROF_GPU_LINE_TESTS=0, the overhead of gnnprof run on the sample unless GNNPROF_GPU_OVERHEAD=0,
# and with GNNPROF_GPU_AB=1 the C++ and Python samples' A/Bs on the device. Writes OUTDIR/log.txt,
# OUTDIR/py.html, OUTDIR/pyg.html, OUTDIR/pytest.txt and OUTDIR/runs.tar.gz (profiles and outputs). Each step is
# bounded by a timeout and the next runs whatever the last did, so a failure still leaves a record.
set -u
out=${1:?usage: gpu_validate.sh OUTDIR}
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
runs=/tmp/gnnprof-gpu-runs
mkdir -p "$runs"
step() { echo; echo "==== $* ($(date +%T))"; }
py=$(command -v python3)

step machine
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
$py -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'
g++ --version | head -1; cmake --version | head -1; /usr/local/cuda/bin/nvcc --version | tail -1; nproc

step unpack debs
mkdir -p /tmp/sysroot
for f in .device-debs/*.deb; do dpkg -x "$f" /tmp/sysroot; done
export LD_LIBRARY_PATH=/tmp/sysroot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tp=$($py -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')

step configure
common=(-S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="/tmp/sysroot/usr;$tp"
        -DCUDAToolkit_ROOT=/usr/local/cuda -DGNNPROF_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$py")
if ! timeout 180 cmake "${common[@]}" >"$runs/configure.log" 2>&1; then
  tail -40 "$runs/configure.log"
  echo "configure with torch failed: again without torch (CUPTI and NVTX checks only)"
  rm -rf build-gpu
  timeout 180 cmake "${common[@]}" -DGNNPROF_WITH_TORCH=OFF >"$runs/configure.log" 2>&1 || { tail -40 "$runs/configure.log"; }
fi
grep -E "gnnprof:|Torch|CUDA" "$runs/configure.log" | head -20

step build
targets=(gnnprof_cli gnnprof_preload gnnprof_cupti cuda_app cupti_convert_test)
ninja -C build-gpu -t targets all 2>/dev/null | grep -q '^gnnprof_torch_observer:' &&
  targets+=(gnnprof_torch_observer sage_train)
ninja -C build-gpu -t targets all 2>/dev/null | grep -q '^gnnprof_python:' && targets+=(gnnprof_python)
timeout 420 ninja -C build-gpu -k 0 "${targets[@]}" >"$runs/build.log" 2>&1
echo "ninja rc $?"; grep -E "error|FAILED" "$runs/build.log" | head -60

cli=build-gpu/cli/gnnprof
export GNNPROF_TEST_PYTHON=$py

step cupti_convert_test
timeout 60 build-gpu/tests/cupti_convert_test --gtest_brief=1 2>&1 | tail -5

step ctest -L gpu
GNNPROF_GPU_KEEP=$runs/gpu timeout 600 ctest --test-dir build-gpu -L gpu --output-on-failure 2>&1 | tail -80

step gnnprof report of the CUDA program
[ -f "$runs/gpu/cuda.json" ] && timeout 60 $cli report "$runs/gpu/cuda.json" 2>&1 | head -80
step gnnprof report of the C++ sample, prefetched
[ -f "$runs/gpu/sage-run.json" ] && timeout 60 $cli report "$runs/gpu/sage-run.json" 2>&1 | head -120

step Python sample --device cuda --prefetch 2 under gnnprof run
timeout 120 $cli run -o "$runs/py-prefetch.json" -- $py samples/python/sage_train.py --device cuda --steps 40 --prefetch 2 \
  >"$runs/py-prefetch.out" 2>&1
echo "rc $?"; tail -5 "$runs/py-prefetch.out"
[ -f "$runs/py-prefetch.json" ] && timeout 60 $cli report "$runs/py-prefetch.json" 2>&1 | sed -n '/== Stages/,/== Diagnostics/p' | head -60

step Python sample --device cuda under gnnprof run
timeout 300 $cli run -o "$runs/py.json" --html "$out/py.html" -- $py samples/python/sage_train.py --device cuda --steps 40 \
  >"$runs/py.out" 2>&1
echo "rc $?"; tail -60 "$runs/py.out"
[ -f "$runs/py.json" ] && timeout 60 $cli report "$runs/py.json" 2>&1 | head -160

step Python sample --device cuda with CUPTI off: the cuda-tensors collector entry
GNNPROF_CUPTI=0 timeout 120 $cli run -o "$runs/py-nocupti.json" -- $py samples/python/sage_train.py --device cuda --steps 30 \
  >"$runs/py-nocupti.out" 2>&1
echo "rc $?"; grep -iE "cupti|cuda" "$runs/py-nocupti.out" | head -20
[ -f "$runs/py-nocupti.json" ] && timeout 60 $cli report "$runs/py-nocupti.json" 2>&1 | sed -n '/== Diagnostics/,$p' | head -40

step PyG script as its users write it, --device cuda, under gnnprof run
if $py -c 'import torch_geometric' 2>/dev/null; then
  timeout 240 $cli run -o "$runs/pyg.json" --html "$out/pyg.html" -- $py tests/python/scripts/pyg_sage.py --device cuda \
    >"$runs/pyg.out" 2>&1
  echo "rc $?"; tail -40 "$runs/pyg.out"
  [ -f "$runs/pyg.json" ] && timeout 60 $cli report "$runs/pyg.json" 2>&1 | head -220
else
  echo "no torch_geometric on this Python"
fi

step Lightning script as its users write it, on the GPU, under gnnprof run
if $py -c 'import lightning' 2>/dev/null || $py -c 'import pytorch_lightning' 2>/dev/null; then
  timeout 240 $cli run -o "$runs/lightning.json" -- $py tests/python/scripts/lightning_mlp.py >"$runs/lightning.out" 2>&1
  echo "rc $?"; tail -20 "$runs/lightning.out"
  [ -f "$runs/lightning.json" ] && timeout 60 $cli report "$runs/lightning.json" 2>&1 | head -150
  echo "-- every iteration observed: the closure's kernels under their own ops"
  GNNPROF_TORCH_SAMPLE=all timeout 240 $cli run -o "$runs/lightning-all.json" -- $py tests/python/scripts/lightning_mlp.py \
    >"$runs/lightning-all.out" 2>&1
  echo "rc $?"
  [ -f "$runs/lightning-all.json" ] && timeout 60 $cli report "$runs/lightning-all.json" 2>&1 | sed -n '/== GPU kernels/,/== Materializations/p' | head -30
else
  echo "no lightning on this Python"
fi

step Python tests on this Python and torch: tests/python, in parallel where pytest-xdist is there
# Lines: tracer.c on 3.11, tracer_monitor.c on 3.12+. pytest from .device-debs (pure Python) when
# the machine has none; no third-party plugins either way but xdist. Log in OUTDIR/pytest.txt.
# The A/B pinned to one CPU is left out: beside other workers its contrast is theirs.
if [ "${GNNPROF_GPU_LINE_TESTS:-1}" = 1 ]; then
  pypath=/tmp/sysroot/usr/lib/python3/dist-packages
  $py -c 'import pytest' 2>/dev/null && pypath=
  xd=(); $py -c 'import xdist' 2>/dev/null && xd=(-p xdist -n "${GNNPROF_GPU_PYTEST_WORKERS:-12}")
  OMP_NUM_THREADS=1 PYTHONPATH=$pypath PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 GNNPROF_CLI=$PWD/$cli \
    GNNPROF_PYTHON_DIR=$PWD/build-gpu/python PYTHONDONTWRITEBYTECODE=1 timeout ${GNNPROF_GPU_PYTEST_S:-300} \
    $py -m pytest -q -p no:cacheprovider --tb=short -rfE -W ignore ${xd[@]+"${xd[@]}"} \
    ${GNNPROF_GPU_PYTEST_FILES:-tests/python/test_python_lines.py tests/python/test_reports.py tests/python/test_prefetch.py} \
    --deselect tests/python/test_prefetch.py::test_a_loop_built_to_lose_is_told_so \
    >"$out/pytest.txt" 2>&1
  echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$out/pytest.txt" | tail -60
fi

if [ "${GNNPROF_GPU_OVERHEAD:-1}" = 1 ]; then
step overhead on the device: the Python sample plain, under gnnprof run, with --lines none and with CUPTI off, interleaved
for r in $(seq 1 "${GNNPROF_GPU_ROUNDS:-5}"); do
  for mode in plain gnnprof nolines nocupti; do
    case $mode in
      plain) cmd=($py) ;;
      gnnprof) cmd=($cli run -o "$runs/ovh-$r.json" -- $py) ;;
      nolines) cmd=($cli run --lines none -o "$runs/ovh-nolines-$r.json" -- $py) ;;
      nocupti) cmd=(env GNNPROF_CUPTI=0 $cli run -o "$runs/ovh-nocupti-$r.json" -- $py) ;;
    esac
    line=$(timeout 120 "${cmd[@]}" samples/python/sage_train.py --device cuda --steps 200 2>/dev/null | grep '^steps')
    echo "$mode $r: $line"
  done
done
fi

if [ "${GNNPROF_GPU_AB:-0}" = 1 ] && [ -x build-gpu/samples/sage_train ]; then
  step C++ sample A/B on the device
  timeout 300 $cli ab --repeat 3 -o "$runs/ab" -- build-gpu/samples/sage_train --device cuda --iterations 200 \
    --eval-nodes 0 --no-report >"$runs/ab.out" 2>&1
  echo "rc $?"; tail -80 "$runs/ab.out"
  step Python sample A/B on the device: inline vs --prefetch 2
  timeout 300 $cli ab --repeat 3 --preload -o "$runs/ab-py" \
    --baseline "$py samples/python/sage_train.py --device cuda --steps 100 --prefetch 0" \
    --candidate "$py samples/python/sage_train.py --device cuda --steps 100 --prefetch 2" >"$runs/ab-py.out" 2>&1
  echo "rc $?"; tail -40 "$runs/ab-py.out"
fi

step done
tar -czf "$out/runs.tar.gz" -C "$runs" . 2>&1 | tail -2
ls -la "$out"
