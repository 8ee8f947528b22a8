#!/usr/bin/env bash
# The demo: profile the GraphSAGE sample (2 epochs on the default 1M-node synthetic graph,
# generated once into ~/.cache/gnnprof), then print its report. Without libtorch the plain C++
# demo loop stands in.
set -euo pipefail
build=${1:-build}
out="$build/demo"
mkdir -p "$out"
if [ -x "$build/samples/sage_train" ]; then
  echo "== sage_train: GraphSAGE, 2 epochs (the first run also generates the dataset) =="
  GNNPROF_QUIET=1 "$build/samples/sage_train" --epochs 2 --no-report --profile "$out/profile.json"
else
  echo "== demo_loop (built without libtorch) =="
  GNNPROF_QUIET=1 "$build/samples/demo_loop" --iterations 200 --profile "$out/profile.json"
fi
echo
"$build/cli/gnnprof" report "$out/profile.json" --source-root .
echo
echo "Profile: $out/profile.json"
