#!/bin/bash
# Downloads the Debian packages that scripts/gpu_validate.sh unpacks on a GPU machine that has
# no package registry (CUDA, cmake, ninja and a CUDA PyTorch are there; fmt, nlohmann-json, Boost,
# GoogleTest, CLI11 and pytest are not), into .device-debs, which git is told to ignore.
# Run here, from the repo root; then carry .device-debs along with the working tree.
set -euo pipefail
dir=.device-debs
mkdir -p "$dir"
exclude=$(git rev-parse --git-common-dir)/info/exclude
mkdir -p "$(dirname "$exclude")"
grep -qxF "/$dir/" "$exclude" 2>/dev/null || echo "/$dir/" >>"$exclude"
cd "$dir"
# pytest and what it imports (pure Python): the line tests run on the machine's own Python.
apt-get download libfmt-dev libfmt9 nlohmann-json3-dev libgtest-dev libcli11-dev libboost-dev libboost1.74-dev \
  python3-pytest python3-pluggy python3-iniconfig python3-packaging python3-py python3-attr 2>&1 | grep -v unsandboxed || true
ls -1
