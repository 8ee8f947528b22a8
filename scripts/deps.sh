#!/usr/bin/env bash
# Installs the Debian packages gnnprof builds and runs with, when any is missing.
# Fast when nothing is missing (one dpkg-query). Not root and something missing: prints the
# exact apt-get line and exits 1.
#   scripts/deps.sh            build and test dependencies
#   scripts/deps.sh --browser  also Debian's chromium, for the HTML-in-a-browser test (CI)
#   scripts/deps.sh --anchors  also line_profiler and Scalene, the anchors bench/ measures against
#   scripts/deps.sh --notebook also IPython and a Jupyter kernel, for the %gnnprof magics' tests (CI)
#   scripts/deps.sh --scripts  also libraries users' training scripts use (tqdm, skorch), for tests of their shapes (CI)
set -euo pipefail

PKGS=(
  cmake ninja-build g++ make pkg-config
  libfmt-dev nlohmann-json3-dev libcli11-dev libgtest-dev libbenchmark-dev
  libboost-dev   # Boost.Math: Student's t for the comparisons' Welch test (headers only)
  libtorch-dev python3-torch
  libopenblas0-openmp   # libtorch's BLAS through libblas.so.3; the reference BLAS is ~8x slower
  python3-dev python3-pytest   # the Python package's native module and its tests
)

for opt in "$@"; do
  case $opt in
    --browser) PKGS+=(chromium) ;;
    --anchors) PKGS+=(python3-line-profiler python3-scalene) ;;
    --notebook) PKGS+=(python3-ipython python3-ipykernel python3-jupyter-client) ;;
    --scripts) PKGS+=(python3-tqdm python3-skorch) ;;
    *) echo "scripts/deps.sh: unknown option $opt (--browser, --anchors, --notebook, --scripts)" >&2; exit 2 ;;
  esac
done

missing=()
status=$(dpkg-query -W -f='${Package} ${Status}\n' "${PKGS[@]}" 2>/dev/null || true)
for p in "${PKGS[@]}"; do
  grep -q "^$p install ok installed$" <<<"$status" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "gnnprof: missing Debian packages; as root run:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "gnnprof: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
