#!/bin/bash
# GPU checks (ctest label "gpu"), run for real only where a CUDA device can be used; elsewhere
# (the CPU-only CI machine) the script exits 77 and ctest reports it skipped.
#   1. CUPTI on a plain CUDA program (tests/instrument/cuda_app.cpp) under `gnnprof run`:
#      pinned/pageable bytes and modes, GPU lanes, GPU ranges inside the NVTX ranges that
#      issued them (host-clock alignment).
#   2. The C++ sample with --device cuda: pinned async h2d bytes; under `gnnprof run`, its
#      batch copies run on a stream of their own, apart from the training kernels.
#   3. The Python sample with --device cuda under `gnnprof run`: GPU time under forward and
#      backward, kernels carrying their launching op, pageable h2d bytes (its features are
#      copied with a plain .to()), one iteration per step.
# Parts 2 and 3 are skipped (with a line saying why) when their torch has no CUDA.
# usage: gpu_test.sh GNNPROF_CLI CUDA_APP SAGE_TRAIN|"" SAGE_TRAIN_PY
# GNNPROF_GPU_KEEP=DIR keeps the runs' profiles and outputs there (the record of a device run).
set -u
cli=$1 cuda_app=$2 sage=$3 pysample=$4
source "$(dirname "$0")/lib.sh"
keep() { [ -n "${GNNPROF_GPU_KEEP:-}" ] && mkdir -p "$GNNPROF_GPU_KEEP" && cp "$tmp"/*.json "$tmp"/*.out "$GNNPROF_GPU_KEEP"/ 2>/dev/null; }
trap 'keep; rm -rf "$tmp"' EXIT

probe=$("$cuda_app" --probe 2>&1)
if [ $? -ne 0 ]; then
  echo "skipped: $probe"
  exit 77
fi
echo "$probe"

# ---- 1. CUPTI on cuda_app ----
# GNNPROF_CUPTI=1: CUPTI from the start, not from the attach thread's first look at the loaded
# libraries, so that no copy comes before it.
GNNPROF_CUPTI=1 "$cli" run -o "$tmp/cuda.json" -- "$cuda_app" >"$tmp/cuda.out" 2>&1
rc=$?
cat "$tmp/cuda.out"
check "cuda_app under gnnprof run exits 0" '[ $rc -eq 0 ]'
cupti_on() {  # cupti_on FILE: the profile lists the cupti collector, enabled
  [ "$(json "$1" "[c['enabled'] for c in p['collectors'] if c['name'] == 'cupti']")" = "[True]" ]
}
check "cupti collector on" 'cupti_on "$tmp/cuda.json"'
bytes() {  # bytes FILE DIRECTION MEMORY MODE
  json "$1" "sum(t['bytes'] for t in p['transfers'] if t['direction']=='$2' and t['memory']=='$3' and t['mode']=='$4')"
}
check "pinned async h2d = 5 x 8 MiB" '[ "$(bytes "$tmp/cuda.json" h2d pinned async)" = $((5 * 8 << 20)) ]'
check "pageable sync h2d = 5 x 4 MiB" '[ "$(bytes "$tmp/cuda.json" h2d pageable sync)" = $((5 * 4 << 20)) ]'
check "pageable sync d2h = 5 x 4 MiB" '[ "$(bytes "$tmp/cuda.json" d2h pageable sync)" = $((5 * 4 << 20)) ]'
cat >"$tmp/aligned.py" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
tl = p["timeline"]
names = tl["names"]
gpu = {t["index"] for t in p["threads"] if t["name"].startswith("GPU")}
ev = lambda i: (tl["ts_ns"][i], tl["ts_ns"][i] + tl["dur_ns"][i])
n = range(len(tl["kind"]))
host = [ev(i) for i in n if tl["kind"][i] == 0 and names[tl["name"][i]] in ("pinned_copy", "pageable_copy", "readback")]
copies = [ev(i) for i in n if tl["kind"][i] == 0 and tl["thread"][i] in gpu and "memcpy" in names[tl["name"][i]]]
tol = 200_000  # 0.2 ms: the alignment of CUPTI's timestamps to the host clock
inside = sum(any(hb - tol <= gb and ge <= he + tol for hb, he in host) for gb, ge in copies)
print(len(host), len(copies), inside)
PY
read -r nhost ncopies inside < <($py "$tmp/aligned.py" "$tmp/cuda.json")
echo "NVTX copy ranges $nhost, GPU memcpy ranges $ncopies, inside an NVTX range $inside"
check "15 GPU memcpy ranges on GPU lanes" '[ "$ncopies" = 15 ]'
check "each GPU memcpy lies inside the NVTX range that issued it (+-0.2 ms)" '[ "$inside" = 15 ]'

# ---- 2. the C++ sample on the device ----
if [ -n "$sage" ]; then
  "$sage" --device cuda --iterations 30 --eval-nodes 0 --no-report --profile "$tmp/sage.json" >"$tmp/sage.out" 2>&1
  rc=$?
  if [ $rc -eq 2 ] && grep -q "no usable CUDA device" "$tmp/sage.out"; then
    echo "C++ sample: skipped ($(tail -1 "$tmp/sage.out"))"
  else
    tail -3 "$tmp/sage.out"
    check "sage_train --device cuda exits 0" '[ $rc -eq 0 ]'
    check "sage_train: pinned async h2d bytes recorded" '[ "$(bytes "$tmp/sage.json" h2d pinned async)" -gt 0 ]'
    "$cli" run -o "$tmp/sage-run.json" -- "$sage" --device cuda --iterations 30 --eval-nodes 0 --no-report --prefetch 2 \
      --profile "$tmp/sage-linked.json" >"$tmp/sage-run.out" 2>&1
    rc=$?
    check "sage_train --prefetch 2 under gnnprof run exits 0" '[ $rc -eq 0 ]'
    # Lanes ("GPU0 stream N") of the host-to-device copies vs lanes of the training kernels:
    # nearly all copy time (the batches; not the few setup copies) on lanes without kernels.
    cat >"$tmp/lanes.py" <<'PY'
import collections, json, sys
p = json.load(open(sys.argv[1]))
tl, th = p["timeline"], {t["index"]: t["name"] for t in p["threads"]}
copy, kern = collections.Counter(), set()
for i in range(len(tl["kind"])):
    lane, name = th.get(tl["thread"][i], ""), tl["names"][tl["name"][i]]
    if tl["kind"][i] != 0 or not lane.startswith("GPU"):
        continue
    if name == "gpu: memcpy HtoD":
        copy[lane] += tl["dur_ns"][i]
    elif name in ("gpu: forward", "gpu: backward"):
        kern.add(lane)
apart = sum(v for k, v in copy.items() if k not in kern)
print(dict(copy), sorted(kern), f"{apart / max(1, sum(copy.values())):.3f}")
sys.exit(0 if copy and kern and apart >= 0.9 * sum(copy.values()) else 1)
PY
    $py "$tmp/lanes.py" "$tmp/sage-run.json"
    check "batch copies run on a stream apart from the training kernels" '$py "$tmp/lanes.py" "$tmp/sage-run.json" >/dev/null'
  fi
fi

# ---- 3. the Python sample on the device ----
if $py -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  # Every iteration's ops observed: the correlation share below is then the observer's, not
  # the iteration sampler's draw.
  GNNPROF_TORCH_SAMPLE=all "$cli" run -o "$tmp/py.json" -- $py "$pysample" --device cuda --steps 20 >"$tmp/py.out" 2>&1
  rc=$?
  tail -3 "$tmp/py.out"
  check "Python sample --device cuda under gnnprof run exits 0" '[ $rc -eq 0 ]'
  check "Python sample: cupti collector on" 'cupti_on "$tmp/py.json"'
  gpu_ns() { json "$tmp/py.json" "sum(s['total_ns'] for s in p['stages'] if s['name'] == 'gpu: $1')"; }
  check "GPU time under forward" '[ "$(gpu_ns forward)" -gt 0 ]'
  check "GPU time under backward" '[ "$(gpu_ns backward)" -gt 0 ]'
  # External correlation: kernels carry the op that launched them.
  share=$(json "$tmp/py.json" "round(sum(k['total_ns'] for k in p['kernels'] if k['op']) / max(1, sum(k['total_ns'] for k in p['kernels'])), 3)")
  echo "kernel time with its launching op: $share"
  check "kernel time carries its launching op (>= 90 %)" "$py -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.9 else 1)' $share"
  check "pageable h2d bytes (blocks)" '[ "$(( $(bytes "$tmp/py.json" h2d pageable async) + $(bytes "$tmp/py.json" h2d pageable sync) ))" -gt 0 ]'
  check "one iteration per step" '[ "$(json "$tmp/py.json" "sum(1 for i in p[\"iterations\"] if i[\"complete\"])")" = 20 ]'
else
  echo "Python sample: skipped ($py's torch has no usable CUDA device)"
fi
exit $fail
