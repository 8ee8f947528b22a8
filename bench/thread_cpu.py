#!/usr/bin/python3
"""CPU time of gnnprof's own threads under the preload, against the loop's.

Runs a Python script (by default the GNN sample) under LD_PRELOAD=libgnnprof_preload.so and,
when it ends, reads every thread's CPU time from /proc/self/task/*/schedstat (ns) in the same
process: the loop's thread, gnnprof-drainer, gnnprof-attach and the rest. gnnprof's threads are the
background work that competes with the loop when torch uses every core (docs/performance.md,
"Background work").

  /usr/bin/python3 bench/thread_cpu.py --preload build/lib/libgnnprof_preload.so --runs 5
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

RUNNER = r"""
import os, runpy, sys, time
script, args = sys.argv[1], sys.argv[2:]
sys.argv = [script] + args
t0 = time.monotonic()
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit:
    pass
wall = time.monotonic() - t0
main = os.getpid()
cpu = {}
for tid in os.listdir("/proc/self/task"):
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            name = f.read().strip()
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            s = int(f.read().split()[0]) / 1e9  # time on a CPU, ns
    except OSError:
        continue
    key = "main" if int(tid) == main else name if name.startswith("gnnprof-") else "other"
    cpu[key] = cpu.get(key, 0.0) + s
print("THREAD_CPU", wall, " ".join(f"{k}={v:.4f}" for k, v in cpu.items()), file=sys.stderr)
"""


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threadless", action="store_true", help="GNNPROF_THREADLESS=1")
    ap.add_argument("script", nargs="*", help="script and its arguments (default: the sample, 40 steps)")
    a = ap.parse_args()
    script = a.script or [os.path.join(root, "samples/python/sage_train.py"), "--steps", "40"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(a.preload), GNNPROF_OUTPUT=os.path.join(tmp, "p-%p.json"),
                   GNNPROF_QUIET="1")
        env.setdefault("OMP_NUM_THREADS", "1")
        if a.threadless:
            env["GNNPROF_THREADLESS"] = "1"
        for _ in range(a.runs):
            r = subprocess.run([sys.executable, "-c", RUNNER] + script, env=env, cwd=tmp, capture_output=True, text=True)
            line = [l for l in r.stderr.splitlines() if l.startswith("THREAD_CPU")]
            if r.returncode != 0 or not line:
                sys.exit(f"thread_cpu.py: run failed (rc {r.returncode}):\n{r.stderr[-2000:]}")
            parts = line[-1].split()
            row = {"wall": float(parts[1])}
            row.update({k: float(v) for k, v in (p.split("=") for p in parts[2:])})
            rows.append(row)
            print(" ".join(f"{k} {v:.4f}" for k, v in row.items()), flush=True)
    keys = sorted({k for r in rows for k in r})
    print(f"median of {len(rows)} runs (s; OMP_NUM_THREADS={env['OMP_NUM_THREADS']}"
          f"{', threadless' if a.threadless else ''}):")
    for k in keys:
        print(f"  {k:16} {statistics.median(r.get(k, 0.0) for r in rows):.4f}")
    bg = statistics.median(sum(v for k, v in r.items() if k.startswith("gnnprof-")) for r in rows)
    print(f"  gnnprof threads  {bg:.4f} s = {100 * bg / statistics.median(r['wall'] for r in rows):.2f} % of one core over the run")


if __name__ == "__main__":
    main()
