#!/usr/bin/env bash
# Where the "second thread" cost of the single-threaded Python sample goes (docs/performance.md,
# "Zero-code attach overhead"): glibc's malloc takes its arena lock once the process has ever
# had a second thread. Profiles the sample with perf in four modes, ROUNDS times each, and
# prints, per run, the share of the process's samples that `malloc` itself takes, and how much
# of malloc's own samples fall on its lock instructions (lock cmpxchg / xchg of the arena mutex).
#
#   bench/malloc_lock.sh [PRELOAD] [ROUNDS]     (needs perf; ~1 min per round)
set -uo pipefail
cd "$(dirname "$0")/.."
preload=$(realpath "${1:-build/lib/libgnnprof_preload.so}")
rounds=${2:-2}
command -v perf >/dev/null || { echo "malloc_lock.sh: perf is not installed" >&2; exit 2; }
[ -f "$preload" ] || { echo "malloc_lock.sh: $preload: no such file" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
idle="import runpy, sys, threading; threading.Thread(target=threading.Event().wait, daemon=True).start(); sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
sample=(samples/python/sage_train.py --steps 40)
gn=(env LD_PRELOAD="$preload" GNNPROF_QUIET=1 GNNPROF_OUTPUT="$tmp/p.json")

run() {  # label, command...
  local label=$1; shift
  OMP_NUM_THREADS=1 perf record -q -F 2000 -o "$tmp/$label.data" "$@" >/dev/null 2>&1
  local total malloc lock
  # Main thread only (pid == tid): the loop's thread.
  read -r total malloc < <(perf script -i "$tmp/$label.data" -F pid,tid,ip,sym,dso 2>/dev/null |
    awk '{split($1, pt, "/"); if (pt[1] != pt[2]) next; n++; if ($3 == "malloc" && $NF ~ /libc\.so/) m++}
         END {printf "%d %.2f\n", n, n ? 100 * m / n : 0}')
  # Share of malloc's own samples on the instruction after each atomic (where the cost lands).
  lock=$(perf annotate -i "$tmp/$label.data" --stdio -s malloc 2>/dev/null |
         awk '/lock cmpxchg|xchg / {grab=1; next} grab && /^ +[0-9.]+ :/ {s += $1; grab=0} END {printf "%.0f", s}' || true)
  printf "%-28s samples %6s   malloc self %5s %%   of which after the arena lock/unlock %3s %%\n" \
    "$label" "${total:-?}" "${malloc:-?}" "${lock:-0}"
}

for r in $(seq 1 "$rounds"); do
  run "plain.$r" /usr/bin/python3 "${sample[@]}"
  run "plain+idle-thread.$r" /usr/bin/python3 -c "$idle" "${sample[@]}"
  run "gnnprof-no-observer.$r" "${gn[@]}" GNNPROF_TORCH_BUILT_PATH=/nonexistent/libtorch_cpu.so /usr/bin/python3 "${sample[@]}"
  run "gnnprof.$r" "${gn[@]}" /usr/bin/python3 "${sample[@]}"
done
