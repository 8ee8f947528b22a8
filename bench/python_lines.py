#!/usr/bin/python3
"""The Python line tracer against its anchors, each measured as ratios in one run with the modes
interleaved (order alternating per round); figures go to docs/performance.md.

    bench/python_lines.py --gnnprof build/cli/gnnprof cost      [--rounds 10] [--n 1000000]
    bench/python_lines.py --gnnprof build/cli/gnnprof sample    [--rounds 20] [--steps 40] [--pin] [--steady-heap]
                                                                [--control] [--no-anchors]
                                                                [--against OTHER/cli/gnnprof]
    bench/python_lines.py --gnnprof build/cli/gnnprof accuracy  [--rounds 5]
    (cost, hook, accuracy: --python OTHER_PYTHON --python-dir PACKAGE_DIR runs another CPython, e.g.
     3.12's sys.monitoring tracer; the anchors that Python lacks are left out. cost: --other-package
     DIR adds the gnnprof mode with another build of the package, for a before/after)
    bench/python_lines.py --gnnprof build/cli/gnnprof hook      [--rounds 10] [--n 2000000]
    bench/python_lines.py --gnnprof build/cli/gnnprof loader    [--rounds 10] [--steps 300] [--workers N]
                                                                [--sample-ops K] [--env-mode NAME:K=V,...]

cost: bench/line_loop.py's pure-Python function of five cheap lines per iteration, run plain,
  under `gnnprof run --lines line_loop.py:hot`, under `kernprof -l` (line_profiler) and under
  Scalene (CPU sampling, its own claim: 10-20 % overhead). The loop times itself; the cost per
  line event is (mode - plain) / line events.
sample: the Python GNN sample (samples/python/sage_train.py) run plain, under `gnnprof run`
  (default: line tracing auto, the training loop), under `gnnprof run --lines none` (the op
  observer only) and under `kernprof -l` on a copy of the script with @profile on main() (the
  function that holds the loop). Whole-loop and per-iteration ratios to plain
  (python_overhead.py's estimators), and each mode's page faults in the loop. --steady-heap runs
  every mode with glibc's heap trim off: the sample's heap sits at the edge of glibc's trim
  threshold, and a trim just before the loop (which any small change in the allocations before
  it can set off) costs one iteration ~3 000 page faults.
hook: bench/line_loop.py's calls of a one-line function that nothing selects, plain and with the
  frame hook installed (`--lines` naming a function that is never called): the cost of the
  hook's one check per unselected frame, per call; and the same calls made from a traced
  function (its line events included), under gnnprof and under line_profiler.
loader: bench/loader_loop.py, a loop over torch's DataLoader (a per-sample Dataset.__getitem__,
  a collate_fn), OMP_NUM_THREADS=1: plain; `gnnprof run` (lines auto: the loop, __getitem__ and
  collate); `gnnprof run --lines loader_loop.py:train` (the loop only: what tracing the
  loader's callees adds is the ratio between the two); `kernprof -l` with @profile on the three.
  --workers N: the DataLoader forks N workers, and the loop-only mode is instead
  GNNPROF_LOADER_WORKERS=0 (the workers record nothing): the ratio is what the workers' own
  profiles (their sessions, ops and traced lines) cost the loop. --sample-ops K: __getitem__
  also runs K small torch ops per sample. --env-mode (repeatable): one more mode, `gnnprof run`
  (lines auto) with these variables set (e.g. GNNPROF_PYTHON_DIR=another build's package).
accuracy: bench/line_loop.py's lines that busy-wait 2, 1 and 0.5 ms and time themselves: each
  line's time in gnnprof's profile against the script's own clock, and its hits."""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
sys.path.insert(0, here)
import python_overhead  # noqa: E402  (report, per-iteration estimators)

PY = "/usr/bin/python3"
# glibc's dynamic thresholds off: freed heap is never trimmed, blocks of 32 MiB and more are mapped.
STEADY_HEAP = "glibc.malloc.trim_threshold=1000000000:glibc.malloc.mmap_threshold=33554432"


def run(cmd, env=None, cwd=None, cpu=None):
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, preexec_fn=pin)
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p.stdout


def interleave(modes, rounds, one):
    out = {m: [] for m in modes}
    for r in range(rounds):
        for m in (modes if r % 2 == 0 else modes[::-1]):
            out[m].append(one(m, r))
    return out


def ci(values, rng, f=statistics.median):
    boot = sorted(f(rng.choices(values, k=len(values))) for _ in range(2000))
    return boot[49], boot[1949]


def python_name():
    return "CPython " + run([PY, "-c", "import sys; print(sys.version.split()[0])"]).strip()


def drop_missing_anchors(cmds):
    """Leaves out the modes that run a module (kernprof, scalene) this Python does not have."""
    for m, cmd in list(cmds.items()):
        if len(cmd) > 2 and cmd[0] == PY and cmd[1] == "-m":
            if subprocess.run([PY, "-c", f"import {cmd[2]}"], capture_output=True).returncode != 0:
                print(f"({m}: left out, {PY} has no {cmd[2]})")
                del cmds[m]


def cost(a, tmp):
    script = os.path.join(here, "line_loop.py")
    cmds = {
        "plain": [PY, script, "cost", str(a.n)],
        "gnnprof": [a.gnnprof, "run", "-o", os.path.join(tmp, "c.json"), "--lines", "line_loop.py:hot", "--", PY, script,
                    "cost", str(a.n)],
        "line_profiler (kernprof -l)": [PY, "-m", "kernprof", "-l", "-o", os.path.join(tmp, "c.lprof"), script, "cost",
                                        str(a.n)],
        "Scalene (--cpu)": [PY, "-m", "scalene", "--cli", "--cpu", "--outfile", os.path.join(tmp, "scalene.txt"), script,
                            "---", "cost", str(a.n)],
    }
    if a.other_package:  # the same mode with another build of the package (before/after)
        cmds["gnnprof, other package"] = ["env", f"GNNPROF_PYTHON_DIR={os.path.abspath(a.other_package)}"] + cmds["gnnprof"]
    events = 5 * a.n + 2

    def one(m, r):
        return float(re.search(r"loop_s ([0-9.]+)", run(cmds[m], cwd=tmp)).group(1))

    drop_missing_anchors(cmds)
    t = interleave(list(cmds), a.rounds, one)
    rng = random.Random(0)
    print(f"\nPer line event ({python_name()}): bench/line_loop.py cost {a.n} ({events} line events), {a.rounds} interleaved rounds")
    for m, v in t.items():
        ratios = [x / p for x, p in zip(v, t["plain"])]
        ns = [(x - p) / events * 1e9 for x, p in zip(v, t["plain"])]
        lo, hi = ci(ratios, rng)
        nlo, nhi = ci(ns, rng)
        print(f"  {m:28s} loop median {statistics.median(v):.4f} s  x{statistics.median(ratios):.2f} of plain "
              f"(95 % CI {lo:.2f}..{hi:.2f}); {statistics.median(ns):+.1f} ns per line event (CI {nlo:+.1f}..{nhi:+.1f})")


def hook(a, tmp):
    script = os.path.join(here, "line_loop.py")
    cmds = {
        "plain": [PY, script, "calls", str(a.n)],
        "gnnprof, hook installed": [a.gnnprof, "run", "-o", os.path.join(tmp, "h.json"), "--lines", "line_loop.py:waits",
                                    "--", PY, script, "calls", str(a.n)],
        "gnnprof --lines none": [a.gnnprof, "run", "-o", os.path.join(tmp, "n.json"), "--lines", "none", "--", PY, script,
                                 "calls", str(a.n)],
        "line_profiler (kernprof -l)": [PY, "-m", "kernprof", "-l", "-o", os.path.join(tmp, "h.lprof"), script, "calls",
                                        str(a.n)],
        # The calls made from a traced line: gnnprof runs the callee untraced, line_profiler traced.
        "gnnprof, caller traced": [a.gnnprof, "run", "-o", os.path.join(tmp, "t.json"), "--", PY, script, "tcalls",
                                   str(a.n)],
        "line_profiler, caller traced": [PY, "-m", "kernprof", "-l", "-o", os.path.join(tmp, "t.lprof"), script, "tcalls",
                                         str(a.n)],
    }

    def one(m, r):
        return float(re.search(r"loop_s ([0-9.]+)", run(cmds[m], cwd=tmp)).group(1))

    drop_missing_anchors(cmds)
    t = interleave(list(cmds), a.rounds, one)
    rng = random.Random(0)
    print(f"\nPer call ({python_name()}): bench/line_loop.py calls / tcalls {a.n}, {a.rounds} interleaved rounds (calls: nothing "
          "selected or decorated; tcalls: the calling function traced, 2 line events per call)")
    for m, v in t.items():
        ratios = [x / p for x, p in zip(v, t["plain"])]
        ns = [(x - p) / a.n * 1e9 for x, p in zip(v, t["plain"])]
        lo, hi = ci(ratios, rng)
        print(f"  {m:28s} loop median {statistics.median(v):.4f} s  x{statistics.median(ratios):.3f} of plain "
              f"(95 % CI {lo:.3f}..{hi:.3f}); {statistics.median(ns):+.1f} ns per call")


def sample(a, tmp):
    src = os.path.join(root, "samples/python/sage_train.py")
    kern = os.path.join(tmp, "sage_train.py")  # the same script with @profile on main()
    text = open(src).read()
    with open(kern, "w") as f:
        f.write(text.replace("\ndef main(argv):", "\n@profile\ndef main(argv):", 1))
    args = ["--steps", str(a.steps), "--iteration-times"]
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    if a.steady_heap:  # every mode, plain included: glibc never trims the heap, a fixed mmap threshold
        env["GLIBC_TUNABLES"] = STEADY_HEAP
    cmds = {
        "plain": [PY, src] + args,
        "gnnprof (lines auto)": [a.gnnprof, "run", "-o", os.path.join(tmp, "s.json"), "--", PY, src] + args,
        "gnnprof --lines none": [a.gnnprof, "run", "-o", os.path.join(tmp, "n.json"), "--lines", "none", "--", PY, src]
        + args,
        "kernprof -l": [PY, "-m", "kernprof", "-l", "-o", os.path.join(tmp, "s.lprof"), kern] + args,
    }
    if a.no_anchors:  # plain and gnnprof only: more rounds in the same time
        del cmds["gnnprof --lines none"], cmds["kernprof -l"]
    envs = {m: env for m in cmds}
    if a.preload:  # the injected library alone, without the Python package (no PYTHONPATH)
        cmds["preload only"] = [PY, src] + args
        envs["preload only"] = dict(env, LD_PRELOAD=a.preload, GNNPROF_OUTPUT=os.path.join(tmp, "pre.json"),
                                    GNNPROF_QUIET="1")
    if a.against:  # another build's gnnprof, lines auto: before/after a change, in the same rounds
        cmds["gnnprof (lines auto), against"] = [a.against, "run", "-o", os.path.join(tmp, "a.json"), "--", PY, src] + args
        envs["gnnprof (lines auto), against"] = env
    if a.control:  # a second plain mode: its ratio to plain is these rounds' noise floor
        cmds["plain (A/A)"] = [PY, src] + args
        envs["plain (A/A)"] = env
    loops = {m: [] for m in cmds}
    iters = {m: [] for m in cmds}
    faults = {m: [] for m in cmds}

    cpus = sorted(os.sched_getaffinity(0))

    def one(m, r):
        out = run(cmds[m], env=envs[m], cwd=tmp, cpu=cpus[r % len(cpus)] if a.pin else None)
        loops[m].append(python_overhead.loop_seconds(out))
        iters[m].append(python_overhead.iteration_seconds(out))
        faults[m].append(int(re.search(r"(\d+) minor page faults", out).group(1)))

    interleave(list(cmds), a.rounds, one)
    if a.save:
        with open(a.save, "w") as f:
            json.dump({"workload": "sample", "steady_heap": a.steady_heap, "loop_s": loops, "iteration_s": iters,
                       "loop_faults": faults}, f)
    heap = ", GLIBC_TUNABLES=" + STEADY_HEAP if a.steady_heap else ""
    python_overhead.report(f"Python GNN sample ({a.steps} steps, OMP_NUM_THREADS={env['OMP_NUM_THREADS']}{heap})", loops,
                           iters, True)
    print("\nminor page faults of the loop thread during the loop (a heap trim before the loop costs ~3 000 more):")
    for m, v in faults.items():
        print(f"  {m:28s} median {statistics.median(v):6.0f}   runs over 2 500: {sum(x > 2500 for x in v)} of {len(v)}")


def loader(a, tmp):
    script = os.path.join(here, "loader_loop.py")
    args = [str(a.steps), "--workers", str(a.workers), "--sample-ops", str(a.sample_ops)]
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    only = "gnnprof (workers off)" if a.workers else "gnnprof (loop only)"
    cmds = {
        "plain": [PY, script] + args,
        "gnnprof (lines auto)": [a.gnnprof, "run", "-o", os.path.join(tmp, "a.json"), "--", PY, script] + args,
        only: [a.gnnprof, "run", "-o", os.path.join(tmp, "l.json")]
        + ([] if a.workers else ["--lines", "loader_loop.py:train"]) + ["--", PY, script] + args,
        "kernprof -l (the same 3)": [PY, "-m", "kernprof", "-l", "-o", os.path.join(tmp, "k.lprof"), script] + args
        + ["--kernprof"],
    }
    envs = {m: env for m in cmds}
    envs[only] = dict(env, GNNPROF_LOADER_WORKERS="0") if a.workers else env
    for spec in a.env_mode or []:
        name, _, assignments = spec.partition(":")
        cmds[name] = cmds["gnnprof (lines auto)"]
        envs[name] = dict(env, **dict(kv.split("=", 1) for kv in assignments.split(",") if kv))

    def one(m, r):
        for f in os.listdir(tmp):  # the workers' profiles of the last run
            if f.endswith(".json"):
                os.remove(os.path.join(tmp, f))
        return float(re.search(r"loop_s ([0-9.]+)", run(cmds[m], env=envs[m], cwd=tmp)).group(1))

    t = interleave(list(cmds), a.rounds, one)
    rng = random.Random(0)
    print(f"\nDataLoader loop: bench/loader_loop.py {' '.join(args)} (64 samples per batch), {a.rounds} "
          f"interleaved rounds, OMP_NUM_THREADS={env['OMP_NUM_THREADS']}")
    for m, v in t.items():
        ratios = [x / p for x, p in zip(v, t["plain"])]
        lo, hi = ci(ratios, rng)
        print(f"  {m:28s} loop median {statistics.median(v):.4f} s  {100 * (statistics.median(ratios) - 1):+.1f} % "
              f"of plain (95 % CI {100 * (lo - 1):+.1f}..{100 * (hi - 1):+.1f})")
    ratios = [x / p for x, p in zip(t["gnnprof (lines auto)"], t[only])]
    lo, hi = ci(ratios, rng)
    per_batch = [(x - p) / a.steps * 1e6 for x, p in zip(t["gnnprof (lines auto)"], t[only])]
    what = "the workers' own profiles" if a.workers else "tracing the loader's callees"
    print(f"  lines auto / {only[9:-1]}: {100 * (statistics.median(ratios) - 1):+.1f} % (95 % CI {100 * (lo - 1):+.1f}.."
          f"{100 * (hi - 1):+.1f}), {statistics.median(per_batch):+.1f} us per batch: {what}")


def accuracy(a, tmp):
    script = os.path.join(here, "line_loop.py")
    lines = {"two": 'timed("two", 0.002)', "one": 'timed("one", 0.001)', "half": 'timed("half", 0.0005)'}
    numbers = {}
    with open(script) as f:
        for n, l in enumerate(f, 1):
            for k, t in lines.items():
                if t in l:
                    numbers[n] = k
    print(f"\nAccuracy: bench/line_loop.py accuracy 100, {a.rounds} runs; gnnprof's line time / the line's own clock")
    errs = {k: [] for k in lines}
    for r in range(a.rounds):
        out_json = os.path.join(tmp, f"a{r}.json")
        out = run([a.gnnprof, "run", "-o", out_json, "--lines", "line_loop.py:waits", "--", PY, script, "accuracy", "100"],
                  cwd=tmp)
        own = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(r"own (\w+) (\d+) (\d+)", out)}
        p = json.load(open(out_json))
        for l in p["lines"]:
            k = numbers.get(l["line"])
            if k is None:
                continue
            ns, hits = own[k]
            if l["hits"] != hits:
                raise SystemExit(f"hits differ for {k}: gnnprof {l['hits']}, script {hits}")
            errs[k].append(l["total_ns"] / ns - 1)
    for k, v in errs.items():
        print(f"  {k:5s} line: error median {100 * statistics.median(v):+.2f} %, worst {100 * max(v, key=abs):+.2f} %; "
              f"hits exact in every run")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["cost", "sample", "accuracy", "hook", "loader"])
    ap.add_argument("--gnnprof", required=True, help="the gnnprof CLI (build/cli/gnnprof)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--workers", type=int, default=0, help="loader: the DataLoader's worker processes")
    ap.add_argument("--sample-ops", type=int, default=0, help="loader: small torch ops per sample in __getitem__")
    ap.add_argument("--env-mode", action="append", help="loader: NAME:K=V,... one more gnnprof mode with these variables")
    ap.add_argument("--save", help="sample: write the raw times to this JSON file")
    ap.add_argument("--preload", help="sample: also a mode with this libgnnprof_preload.so injected alone (no package)")
    ap.add_argument("--pin", action="store_true",
                    help="sample: pin every run of a round to one CPU (round r: the r-th CPU, cyclically), so that "
                    "the modes of a round share a CPU; this machine's vCPUs can differ in speed (bench/vcpu_speed.py)")
    ap.add_argument("--steady-heap", action="store_true",
                    help="sample: run every mode with glibc's heap trim off and a fixed mmap threshold (%s), so that "
                         "no mode's loop pays for a heap trimmed before it" % STEADY_HEAP)
    ap.add_argument("--against", help="sample: also this other build's gnnprof CLI, lines auto (before/after)")
    ap.add_argument("--control", action="store_true", help="sample: also a second plain mode (A/A), the noise floor")
    ap.add_argument("--no-anchors", action="store_true",
                    help="sample: leave out the kernprof and --lines none modes (more rounds in the same time)")
    ap.add_argument("--python", help="cost, hook, accuracy: this Python instead of /usr/bin/python3")
    ap.add_argument("--python-dir", help="the gnnprof package built for --python (GNNPROF_PYTHON_DIR)")
    ap.add_argument("--other-package", help="cost: also a mode with this package directory (another build, A/B)")
    a = ap.parse_args()
    global PY
    if a.python:
        PY = a.python
    if a.python_dir:
        os.environ["GNNPROF_PYTHON_DIR"] = os.path.abspath(a.python_dir)
    a.rounds = a.rounds or {"cost": 10, "sample": 20, "accuracy": 5, "hook": 10, "loader": 10}[a.what]
    if a.what == "loader" and a.steps == 40:
        a.steps = 300
    if a.what == "hook" and a.n == 1000000:
        a.n = 2000000
    a.gnnprof = os.path.abspath(a.gnnprof)
    with tempfile.TemporaryDirectory() as tmp:
        {"cost": cost, "sample": sample, "accuracy": accuracy, "hook": hook, "loader": loader}[a.what](a, tmp)


if __name__ == "__main__":
    main()
