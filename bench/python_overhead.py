#!/usr/bin/python3
"""Zero-code overhead, measured as ratios in one run with the three modes interleaved:
plain / under libgnnprof_preload.so (default: the observer samples iterations when observing
every op would cost more than 5 %) / the same with GNNPROF_TORCH_SAMPLE=all (ops observed in
every iteration) / under torch.autograd.profiler.profile().

    bench/python_overhead.py --preload build/lib/libgnnprof_preload.so [--repeat 5]

Both loops time themselves (import and set-up excluded) and print "loop_s X" or, for the GNN
sample, "... loop X s ...". Reports the median loop time per mode and the median of the
per-round ratios against plain, with a 95 % bootstrap interval of that median. The order of
the modes alternates from round to round (ABC, CBA, ...), so a drift of the machine during a
round does not favour one mode. --control adds a second plain mode: its ratio to plain is
this machine's noise floor for the same number of rounds. Figures go to docs/performance.md.

--per-iteration also compares per-iteration times (the small-op loop: per block of 100 steps).
The sample's batches are seeded, so iteration i does the same work in every run (the small-op
loop repeats one batch); another tenant of the machine only ever adds time. For each mode it sums, over iterations, the minimum (and the median) of
iteration i's time across rounds, and reports the ratio of those sums to plain's, all
iterations and from the 6th on (start-up excluded), with a 95 % bootstrap interval over
rounds. The minimum leaves out what does not happen in every round, gnnprof's occasional work
too (a periodic flush, <= 0.2 % of a core by its pacing); the median keeps what happens in most
rounds."""
import argparse, json, os, random, re, statistics, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)

# Runs sys.argv[1] as __main__ after starting one idle Python thread: the cost of the process
# having a second thread at all (a plain single-threaded loop leaves its single-thread paths).
IDLE_THREAD = ("import runpy, sys, threading; threading.Thread(target=threading.Event().wait, daemon=True).start(); "
               "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")

CPU = False  # --cpu: the loop thread's CPU time (the GNN sample prints it) instead of wall time

def loop_seconds(out):
    if CPU:
        m = re.search(r"loop thread's CPU time ([0-9.]+) s", out)
        if not m:
            raise SystemExit("no loop CPU time in output (only the GNN sample prints it):\n" + out)
        return float(m.group(1))
    m = re.search(r"loop_s ([0-9.]+)", out) or re.search(r" loop ([0-9.]+) s", out)
    if not m:
        raise SystemExit("no loop time in output:\n" + out)
    return float(m.group(1))

def iteration_seconds(out):
    m = re.search(r"^iteration_s (.*)$", out, re.M)
    if not m:
        raise SystemExit("no iteration times in output (--per-iteration needs a loop run with --iteration-times):\n" + out)
    return [float(x) for x in m.group(1).split()]

def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed ({p.returncode}):\n{p.stderr}")
    return loop_seconds(p.stdout), (iteration_seconds(p.stdout) if "--iteration-times" in cmd else None)

def per_iteration_report(it, rng, first):
    """Sum over iterations (from index `first`) of the per-iteration minimum and median across
    rounds, per mode, as ratios to plain with bootstrap intervals (rounds resampled, paired)."""
    rounds = len(it["plain"])
    def est(mode, idx, f):
        n = len(it[mode][0])
        return sum(f([it[mode][r][i] for r in idx]) for i in range(first, n))
    out = []
    for name, f in (("min", min), ("median", statistics.median)):
        base = est("plain", range(rounds), f)
        boots = []
        for _ in range(1000):
            idx = rng.choices(range(rounds), k=rounds)
            b = est("plain", idx, f)
            boots.append({m: est(m, idx, f) / b for m in it})
        for m in it:
            if m == "plain":
                continue
            r = est(m, range(rounds), f) / base
            bs = sorted(x[m] for x in boots)
            out.append(f"  {m:15s} per-iteration {name:6s} from iteration {first + 1}: {100 * (r - 1):+.2f} % "
                       f"(95 % CI {100 * (bs[24] - 1):+.2f}..{100 * (bs[974] - 1):+.2f} %)")
    return out

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sample-steps", type=int, default=40)
    ap.add_argument("--no-torch-profiler", action="store_true", help="leave out the (slow) torch.profiler mode")
    ap.add_argument("--only", choices=["small", "sample"], help="one of the two loops")
    ap.add_argument("--no-all", action="store_true", help="leave out the every-iteration mode")
    ap.add_argument("--control", action="store_true", help="add an A/A mode: plain run twice per round")
    ap.add_argument("--breakdown", action="store_true",
                    help="add 'plain + idle thread' (the script run after starting one idle Python thread) and "
                         "'gnnprof, no observer' (the session and its threads without the torch observer)")
    ap.add_argument("--threadless", action="store_true",
                    help="add 'gnnprof, threadless' (GNNPROF_THREADLESS=1: no gnnprof thread while the process is "
                         "single-threaded; docs/zero-code.md, 'Threads'; the default since the eleventh session, "
                         "so the same as 'gnnprof' with a current preload)")
    ap.add_argument("--threads", action="store_true",
                    help="add 'gnnprof, threads' (GNNPROF_THREADLESS=0: gnnprof's drainer and attach threads from "
                         "the start, the default before the eleventh session)")
    ap.add_argument("--env-mode", action="append", default=[], metavar="LABEL:VAR=VAL[,VAR=VAL...]",
                    help="add a gnnprof mode with these extra environment variables (repeatable), e.g. "
                         "'drain 100 ms:GNNPROF_DRAIN_INTERVAL_MS=100'")
    ap.add_argument("--per-iteration", action="store_true",
                    help="also compare per-iteration (small-op loop: per 100-step block) minimum and median times across rounds")
    ap.add_argument("--save", help="write the raw times (per mode, round and iteration) to this JSON file")
    ap.add_argument("--cpu", action="store_true",
                    help="compare the loop thread's CPU time instead of wall time (GNN sample only): time the "
                         "thread was descheduled (other tenants of the VM) drops out; gnnprof's other threads too")
    ap.add_argument("--load", nargs="+", metavar="FILE",
                    help="run nothing: pool the rounds of runs saved with --save (the modes they all have) and report")
    ap.add_argument("--relabel", action="append", default=[], metavar="FILE:OLD=NEW",
                    help="with --load: in FILE, read mode OLD as NEW (repeatable; renames apply together), e.g. to "
                         "pool runs saved before and after a default changed")
    a = ap.parse_args()
    if a.load:
        runs = [json.load(open(f)) for f in a.load]
        renames = {}  # file -> {old mode: new mode}
        for spec in a.relabel:
            f, _, rename = spec.rpartition(":")
            old, _, new = rename.partition("=")
            if f not in a.load or not old or not new:
                ap.error(f"--relabel {spec!r}: expected FILE:OLD=NEW with FILE among --load's")
            renames.setdefault(f, {})[old] = new
        for f, r in zip(a.load, runs):
            names = renames.get(f, {})
            for key in ("loop_s", "iteration_s"):
                r[key] = {names.get(m, m): v for m, v in r[key].items()}
        modes = [m for m in runs[0]["loop_s"] if all(m in r["loop_s"] for r in runs)]
        t = {m: sum((r["loop_s"][m] for r in runs), []) for m in modes}
        it = {m: sum((r["iteration_s"][m] for r in runs), []) for m in modes}
        report(f"{runs[0]['workload']}, {len(runs)} saved runs pooled ({', '.join(a.load)})", t, it, a.per_iteration)
        return
    if not a.preload:
        ap.error("--preload is required (unless --load)")
    global CPU
    CPU = a.cpu
    tmp = tempfile.mkdtemp()
    workloads = {
        "small-op MLP loop (bench/small_ops.py, 2000 steps)": [sys.executable, os.path.join(here, "small_ops.py"), "2000"]
            + (["--iteration-times"] if a.per_iteration else []),
        f"Python GNN sample (samples/python/sage_train.py, {a.sample_steps} steps)":
            [sys.executable, os.path.join(root, "samples/python/sage_train.py"), "--steps", str(a.sample_steps)]
            + (["--iteration-times"] if a.per_iteration else []),
    }
    base_env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    if a.only:
        workloads = {k: v for k, v in workloads.items() if k.startswith("small" if a.only == "small" else "Python")}
    for name, cmd in workloads.items():
        modes = ["plain"] + (["plain (A/A)"] if a.control else []) + ["gnnprof"] + ([] if a.no_all else ["gnnprof, all"])
        if a.threadless:
            modes.append("gnnprof, threadless")
        if a.threads:
            modes.append("gnnprof, threads")
        if a.breakdown:
            modes += ["plain + idle thread", "gnnprof, no observer"]
        extra = {}
        for spec in a.env_mode:
            label, _, assigns = spec.partition(":")
            if not label or not assigns:
                ap.error(f"--env-mode {spec!r}: expected LABEL:VAR=VAL[,VAR=VAL...]")
            extra["gnnprof, " + label] = dict(kv.split("=", 1) for kv in assigns.split(","))
            modes.append("gnnprof, " + label)
        if not a.no_torch_profiler:
            modes.append("torch.profiler")
        t = {m: [] for m in modes}
        it = {m: [] for m in modes}
        for r in range(a.repeat):
            env = dict(base_env, LD_PRELOAD=a.preload, GNNPROF_OUTPUT=os.path.join(tmp, f"p{r}.json"), GNNPROF_QUIET="1")
            how = {
                "plain": (cmd, base_env),
                "plain (A/A)": (cmd, base_env),
                "gnnprof": (cmd, env),  # default: iteration sampling decided by the observer
                "gnnprof, all": (cmd, dict(env, GNNPROF_TORCH_SAMPLE="all")),  # ops in every iteration
                "gnnprof, threadless": (cmd, dict(env, GNNPROF_THREADLESS="1")),
                "gnnprof, threads": (cmd, dict(env, GNNPROF_THREADLESS="0")),
                "torch.profiler": (cmd + ["--torch-profiler"], base_env),
                "plain + idle thread": ([cmd[0], "-c", IDLE_THREAD] + cmd[1:], base_env),
                # The test hook of app.zero_code: pretend gnnprof was built against another torch.
                "gnnprof, no observer": (cmd, dict(env, GNNPROF_TORCH_BUILT_PATH="/nonexistent/libtorch_cpu.so")),
            }
            how.update({m: (cmd, dict(env, **e)) for m, e in extra.items()})
            for m in (modes if r % 2 == 0 else modes[::-1]):
                loop, iters = run(*how[m])
                t[m].append(loop)
                it[m].append(iters)
        if a.save:
            with open(a.save, "w") as f:
                json.dump({"workload": name, "omp_num_threads": base_env["OMP_NUM_THREADS"], "cpu": CPU,
                           "loop_s": t, "iteration_s": it}, f)
        report(name, t, it, a.per_iteration)

def report(name, t, it, per_iteration):
    """Whole-loop median ratios to plain (and, with per_iteration, the per-iteration estimators)."""
    rounds = len(t["plain"])
    print(f"\n{name}, {rounds} interleaved rounds (order alternating)")
    rng = random.Random(0)
    for mode, v in t.items():
        ratios = [x / p for x, p in zip(v, t["plain"])]
        med = statistics.median(ratios)
        boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
        lo, hi = boot[49], boot[1949]
        print(f"  {mode:15s} median {statistics.median(v):8.4f} s   vs plain: median ratio "
              f"{med:.3f} ({100 * (med - 1):+.1f} %, 95 % CI {100 * (lo - 1):+.1f}..{100 * (hi - 1):+.1f} %)  "
              f"rounds {' '.join(f'{x:.3f}' for x in ratios)}")
    if per_iteration and it["plain"][0] is not None:
        # torch.profiler: whole-loop figures only (its loop is not the one to compare per iteration).
        it = {m: v for m, v in it.items() if m != "torch.profiler"}
        for first in (0, 5):
            print("\n".join(per_iteration_report(it, rng, first)))

if __name__ == "__main__":
    main()
