#!/usr/bin/python3
"""Zero-code overhead, measured as ratios in one run with the three modes interleaved:
plain / under libgnnprof_preload.so (default: the observer samples iterations when observing
every op would cost more than 5 %) / the same with GNNPROF_TORCH_SAMPLE=all (ops observed in
every iteration) / under torch.autograd.profiler.profile().

    bench/python_overhead.py --preload build/lib/libgnnprof_preload.so [--repeat 5]

Both loops time themselves (import and set-up excluded) and print "loop_s X" or, for the GNN
sample, "... loop X s ...". Reports the median loop time per mode and the median of the
per-round ratios against plain. Figures go to docs/performance.md."""
import argparse, os, re, statistics, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)

def loop_seconds(out):
    m = re.search(r"loop_s ([0-9.]+)", out) or re.search(r" loop ([0-9.]+) s", out)
    if not m:
        raise SystemExit("no loop time in output:\n" + out)
    return float(m.group(1))

def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed ({p.returncode}):\n{p.stderr}")
    return loop_seconds(p.stdout)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sample-steps", type=int, default=40)
    ap.add_argument("--no-torch-profiler", action="store_true", help="leave out the (slow) torch.profiler mode")
    ap.add_argument("--only", choices=["small", "sample"], help="one of the two loops")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    workloads = {
        "small-op MLP loop (bench/small_ops.py, 2000 steps)": [sys.executable, os.path.join(here, "small_ops.py"), "2000"],
        f"Python GNN sample (samples/python/sage_train.py, {a.sample_steps} steps)":
            [sys.executable, os.path.join(root, "samples/python/sage_train.py"), "--steps", str(a.sample_steps)],
    }
    base_env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    if a.only:
        workloads = {k: v for k, v in workloads.items() if k.startswith("small" if a.only == "small" else "Python")}
    for name, cmd in workloads.items():
        t = {"plain": [], "gnnprof": [], "gnnprof, all": [], "torch.profiler": []}
        for r in range(a.repeat):
            t["plain"].append(run(cmd, base_env))
            env = dict(base_env, LD_PRELOAD=a.preload, GNNPROF_OUTPUT=os.path.join(tmp, f"p{r}.json"), GNNPROF_QUIET="1")
            t["gnnprof"].append(run(cmd, env))  # default: iteration sampling decided by the observer
            t["gnnprof, all"].append(run(cmd, dict(env, GNNPROF_TORCH_SAMPLE="all")))  # ops in every iteration
            if not a.no_torch_profiler:
                t["torch.profiler"].append(run(cmd + ["--torch-profiler"], base_env))
        print(f"\n{name}, {a.repeat} interleaved rounds")
        for mode, v in t.items():
            if not v:
                continue
            ratios = [x / p for x, p in zip(v, t["plain"])]
            print(f"  {mode:15s} median {statistics.median(v):8.4f} s   vs plain: median ratio "
                  f"{statistics.median(ratios):.3f} (+{100 * (statistics.median(ratios) - 1):.1f} %)  "
                  f"rounds {' '.join(f'{x:.3f}' for x in ratios)}")

if __name__ == "__main__":
    main()
