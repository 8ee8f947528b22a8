#!/bin/bash
# Device checks of the paths added since the third GPU session (docs/gpu-validation.md), on the
# build-gpu that scripts/gpu_validate.sh made: zero-code prefetch of a pinned DataLoader with
# workers on the GPU (output equal with and without it, its report, the A/B that exposed-data-time
# proposes) and the Lightning probe's bisection (scripts/gpu_frameworks.sh).
#   scripts/gpu_new_paths.sh OUTDIR
set -u
out=${1:?usage: gpu_new_paths.sh OUTDIR}
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
py=$(command -v python3)
cli=$PWD/build-gpu/cli/gnnprof
export LD_LIBRARY_PATH=/tmp/sysroot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
step() { echo; echo "==== $* ($(date +%T))"; }
s=tests/python/scripts/pinned_loader_loop.py
keep=/tmp/gnnprof-new-paths; mkdir -p $keep

step "pinned DataLoader, 2 workers, plain"
timeout 90 $py $s 3 2 >$keep/plain.out 2>&1; echo "rc $?"; cat $keep/plain.out
step "the same under gnnprof run, no prefetch: its exposed-data-time proposal"
timeout 120 $cli run -o $keep/run.json -- $py $s 3 2 >$keep/run.out 2>&1; echo "rc $?"
grep -q ^epoch $keep/plain.out && diff <(grep ^epoch $keep/plain.out) <(grep ^epoch $keep/run.out) && echo "output equal"
timeout 60 $cli report $keep/run.json 2>&1 | sed -n '/== Diagnostics/,/== /p' | cut -c1-600 | head -30
# the stage rows behind exposed-data-time / loader-bound (2026-11-28: exposed-data-time, not loader-bound)
timeout 60 $cli report $keep/run.json 2>&1 | sed -n '/== Iterations/,/== Analysis/p' | head -24
cp $keep/run.json $keep/run.out "$out/" 2>/dev/null
step "zero-code prefetch (GNNPROF_PREFETCH_LOADERS=1, depth 2) on the GPU"
GNNPROF_PREFETCH_LOADERS=1 GNNPROF_PREFETCH=2 timeout 120 $cli run -o $keep/zp.json -- $py $s 3 2 >$keep/zp.out 2>&1
echo "rc $?"; grep -v '^epoch' $keep/zp.out | head -20
grep -q ^epoch $keep/plain.out && diff <(grep ^epoch $keep/plain.out) <(grep ^epoch $keep/zp.out) && echo "output equal"
timeout 60 $cli report $keep/zp.json 2>&1 | grep -E '^Collectors|prefetch' | cut -c1-900 | head -12
timeout 60 $cli report $keep/zp.json 2>&1 | sed -n '/== Transfers/,/== /p' | head -20
timeout 60 $cli report $keep/zp.json 2>&1 | sed -n '/== Line table/,/== Stages/p' | head -40
timeout 60 $cli report $keep/zp.json 2>&1 | sed -n '/== Iterations/,/== Analysis/p' | head -24
cp $keep/zp.json $keep/zp.out "$out/" 2>/dev/null
step "Lightning probe bisection"
GNNPROF_GPU_PROBE_ONLY=1 bash scripts/gpu_frameworks.sh "$out/frameworks"
# last: a run each side was slower prefetched on the H200 (4.43 against 3.56 ms, 2026-11-28), not an A/B
step "gnnprof ab on it (inline vs zero-code prefetch), 3 runs a side"
timeout ${GNNPROF_GPU_AB_S:-150} $cli ab --repeat 3 -o $keep/ab -- $py $s 3 2 >$keep/ab.out 2>&1; echo "rc $?"; tail -40 $keep/ab.out
tar -czf "$out/new-paths.tar.gz" -C $keep . 2>&1 | tail -2
step done
