#!/usr/bin/env bash
# The demo: run the instrumented sample loop with profiling on, then print its report.
set -euo pipefail
build=${1:-build}
out="$build/demo"
mkdir -p "$out"
echo "== demo_loop (200 iterations) =="
GNNPROF_QUIET=1 "$build/samples/demo_loop" --iterations 200 --profile "$out/profile.json"
echo
"$build/cli/gnnprof" report "$out/profile.json" --source-root .
echo
echo "Profile: $out/profile.json"
