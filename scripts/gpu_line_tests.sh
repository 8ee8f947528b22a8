#!/bin/bash
# The line tests alone on a GPU machine (its Python and torch): scripts/gpu_line_tests.sh OUTDIR,
# with .device-debs as for gpu_validate.sh. For a short device call.
set -u
py=$(command -v python3); out=$1; mkdir -p $out; exec > >(tee -a "$out/log.txt") 2>&1
mkdir -p /tmp/sysroot; for f in .device-debs/*.deb; do dpkg -x "$f" /tmp/sysroot; done
export LD_LIBRARY_PATH=/tmp/sysroot/usr/lib/x86_64-linux-gnu
tp=$($py -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
date +%T; timeout 60 cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="/tmp/sysroot/usr;$tp" -DCUDAToolkit_ROOT=/usr/local/cuda -DGNNPROF_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$py" > /tmp/cfg.log 2>&1; echo cfg $?
date +%T; timeout 100 ninja -C build-gpu gnnprof_cli gnnprof_preload gnnprof_torch_observer gnnprof_cupti gnnprof_python > /tmp/build.log 2>&1; echo build $?; grep -E "error|FAILED" /tmp/build.log | head
date +%T; pypath=/tmp/sysroot/usr/lib/python3/dist-packages; $py -c 'import pytest' 2>/dev/null && pypath=
PYTHONPATH=$pypath PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 GNNPROF_TEST_PYTHON=$py GNNPROF_CLI=$PWD/build-gpu/cli/gnnprof GNNPROF_PYTHON_DIR=$PWD/build-gpu/python PYTHONDONTWRITEBYTECODE=1 timeout ${GNNPROF_GPU_PYTEST_S:-400} $py -m pytest -q -p no:cacheprovider --tb=short -W ignore tests/python/test_python_lines.py 2>&1 | tail -80
date +%T
