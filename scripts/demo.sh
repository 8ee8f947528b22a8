#!/usr/bin/env bash
# The demo: the GraphSAGE sample profiled as baseline (batches produced inline) and prefetched
# (two batches ahead on a background thread), interleaved, then the reports:
#   gnnprof-demo/report.html      the comparison, both variants' charts side by side
#   gnnprof-demo/<variant>.html   each variant's full report
#   gnnprof-demo/<variant>.trace.json  Chrome traces (Perfetto UI, chrome://tracing)
#   gnnprof-demo/ab/              every run's profile and log, comparison.json
# The first run generates the 1M-node dataset into ~/.cache/gnnprof. Without libtorch the
# plain C++ demo loop stands in.
set -euo pipefail
build=${1:-build}
out=gnnprof-demo
cli="$build/cli/gnnprof"
mkdir -p "$out"
if [ ! -x "$build/samples/sage_train" ]; then
  echo "== demo_loop (built without libtorch) =="
  GNNPROF_QUIET=1 "$build/samples/demo_loop" --iterations 200 --profile "$out/profile.json"
  "$cli" report "$out/profile.json" --source-root . --html "$out/report.html" --trace "$out/profile.trace.json"
  exit 0
fi
train=("$build/samples/sage_train" --no-report)
echo "== dataset (generated once) =="
GNNPROF_ENABLED=0 "${train[@]}" --iterations 1 --eval-nodes 0 | sed -n 1p
echo
echo "== gnnprof ab: baseline (GNNPROF_PREFETCH=0) vs prefetched (=2), 2 runs each, interleaved =="
rm -rf "$out/ab"
"$cli" ab --repeat 2 -o "$out/ab" -- "${train[@]}" --epochs 1 --eval-nodes 1024 >"$out/comparison.txt"
for variant in baseline candidate; do
  "$cli" report "$out/ab/$variant-2.json" --source-root . --html "$out/$variant.html" --trace "$out/$variant.trace.json" \
    >"$out/$variant.txt" 2>/dev/null
done
"$cli" compare "$out/ab/comparison.json" --html "$out/report.html" >/dev/null
echo
echo "== report of the baseline run =="
cat "$out/baseline.txt"
echo
echo "== baseline vs prefetched =="
cat "$out/comparison.txt"
echo
echo "Reports in $out/: report.html (comparison), baseline.html, candidate.html,"
echo "baseline.trace.json, candidate.trace.json (open in https://ui.perfetto.dev), ab/ (profiles, logs, comparison.json)"
