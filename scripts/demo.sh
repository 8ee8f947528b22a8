#!/usr/bin/env bash
# The demo: the GraphSAGE sample profiled as baseline (batches produced inline) and prefetched
# (two batches ahead on a background thread), interleaved, then the prefetched run's report and
# the per-stage comparison. The first run generates the 1M-node dataset into ~/.cache/gnnprof.
# Without libtorch the plain C++ demo loop stands in.
set -euo pipefail
build=${1:-build}
out="$build/demo"
mkdir -p "$out"
cli="$build/cli/gnnprof"
if [ ! -x "$build/samples/sage_train" ]; then
  echo "== demo_loop (built without libtorch) =="
  GNNPROF_QUIET=1 "$build/samples/demo_loop" --iterations 200 --profile "$out/profile.json"
  "$cli" report "$out/profile.json" --source-root .
  exit 0
fi
train=("$build/samples/sage_train" --no-report)
echo "== dataset (generated once) =="
GNNPROF_ENABLED=0 "${train[@]}" --iterations 1 --eval-nodes 0 | sed -n 1p
echo
echo "== gnnprof ab: baseline (GNNPROF_PREFETCH=0) vs prefetched (=2), 2 runs each, interleaved =="
rm -rf "$out/ab"
"$cli" ab --repeat 2 -o "$out/ab" -- "${train[@]}" --epochs 1 --eval-nodes 1024 >"$out/comparison.txt"
echo
echo "== report of a prefetched run =="
"$cli" report "$out/ab/candidate-2.json" --source-root .
echo
echo "== baseline vs prefetched =="
cat "$out/comparison.txt"
echo
echo "Profiles, logs and comparison.json: $out/ab"
