#!/usr/bin/env bash
# Where the loop thread's time goes under gnnprof, symbol by symbol (docs/performance.md, "Is it
# the work on the other core?"): profiles the GNN sample with perf in three modes (plain, gnnprof,
# gnnprof threadless), ROUNDS times each and interleaved, keeps the main thread's samples, and
# prints per shared object and per symbol the mean sample counts of two modes and their difference.
#
#   bench/perf_symbols.sh [PRELOAD] [ROUNDS] [STEPS]   (needs perf; ~25 s per round)
set -uo pipefail
cd "$(dirname "$0")/.."
preload=$(realpath "${1:-build/lib/libgnnprof_preload.so}")
rounds=${2:-4}
steps=${3:-80}
command -v perf >/dev/null || { echo "perf_symbols.sh: perf is not installed" >&2; exit 2; }
[ -f "$preload" ] || { echo "perf_symbols.sh: $preload: no such file" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gn=(env LD_PRELOAD="$preload" GNNPROF_QUIET=1 GNNPROF_OUTPUT="$tmp/p.json")
for r in $(seq 1 "$rounds"); do
  for m in plain gnnprof threadless; do
    case $m in
      plain) pre=() ;;
      gnnprof) pre=("${gn[@]}") ;;
      threadless) pre=("${gn[@]}" GNNPROF_THREADLESS=1) ;;
    esac
    OMP_NUM_THREADS=1 perf record -q -F 2500 -o "$tmp/$m.data" "${pre[@]}" /usr/bin/python3 samples/python/sage_train.py --steps "$steps" >/dev/null 2>&1
    # Main thread only (pid == tid): "count<TAB>dso|symbol".
    perf script -i "$tmp/$m.data" -F pid,tid,ip,sym,dso 2>/dev/null |
      awk '{split($1, pt, "/"); if (pt[1] != pt[2]) next; d = $NF; sub(/.*\//, "", d); sub(/\)$/, "", d);
            s = $3; for (i = 4; i < NF; i++) s = s " " $i; c[d "|" s]++}
           END {for (k in c) print c[k] "\t" k}' > "$tmp/$m.$r.sym"
    rm -f "$tmp/$m.data"
  done
done
/usr/bin/python3 - "$tmp" <<'PY'
import collections, glob, sys
tmp = sys.argv[1]
def load(mode):
    runs = []
    for f in sorted(glob.glob(f"{tmp}/{mode}.*.sym")):
        c = collections.Counter()
        for line in open(f):
            n, key = line.rstrip("\n").split("\t", 1)
            dso, sym = key.split("|", 1)
            c[(dso, sym[:90])] += int(n)
        runs.append(c)
    return runs
def mean(runs, k):
    return sum(r[k] for r in runs) / len(runs)
def compare(a, b):
    A, B = load(a), load(b)
    ta = sum(sum(r.values()) for r in A) / len(A)
    tb = sum(sum(r.values()) for r in B) / len(B)
    print(f"\n{b} against {a}: main-thread samples {ta:.0f} -> {tb:.0f} ({100 * (tb - ta) / ta:+.2f} %); "
          f"per run {[sum(r.values()) for r in A]} / {[sum(r.values()) for r in B]}")
    by = collections.defaultdict(lambda: [0.0, 0.0])
    for i, runs in enumerate((A, B)):
        for r in runs:
            for (d, _), n in r.items():
                by[d][i] += n / len(runs)
    print("  by object (|difference| >= 8 samples):")
    for d, (x, y) in sorted(by.items(), key=lambda kv: -abs(kv[1][1] - kv[1][0])):
        if abs(y - x) >= 8:
            print(f"    {y - x:+8.1f}  {x:8.1f} -> {y:8.1f}  {d}")
    keys = set().union(*A, *B)
    rows = sorted(keys, key=lambda k: mean(B, k) - mean(A, k))
    print("  symbols, largest increases then largest decreases:")
    for k in rows[::-1][:20] + rows[:8]:
        print(f"    {mean(B, k) - mean(A, k):+8.1f}  {mean(A, k):7.1f} -> {mean(B, k):7.1f}  {k[0][:22]:22s} {k[1]}")
compare("plain", "gnnprof")
compare("gnnprof", "threadless")
PY
