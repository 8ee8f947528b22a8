#!/usr/bin/python3
"""What the package's torch module hooks (GNNPROF_TORCH_MODULES) cost per module call: a
Sequential of 20 small Linear layers called under no_grad, timed by itself, run plain and
under `gnnprof run` with the hooks off and on, modes interleaved (order alternating per round).

    bench/module_hooks.py --gnnprof build/cli/gnnprof [--rounds 10]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

WORKLOAD = r"""
import time, torch
m = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(20)])
x = torch.randn(4, 8)
with torch.no_grad():
    for _ in range(200):
        m(x)
    best = 1e9
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(500):
            m(x)
        best = min(best, (time.perf_counter() - t) / 500 / 21)  # 21 module calls per m(x)
print(best * 1e9)
"""


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gnnprof", required=True)
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "modules.py")
        with open(path, "w") as f:
            f.write(WORKLOAD)
        py = "/usr/bin/python3"
        prof = [a.gnnprof, "run", "-o", os.path.join(tmp, "p.json"), "--", py, path]
        modes = {
            "plain": ([py, path], {}),
            "gnnprof, module hooks off": (prof, {"GNNPROF_TORCH_MODULES": "0"}),
            "gnnprof, module hooks on (default)": (prof, {"GNNPROF_TORCH_MODULES": "1"}),
        }
        ns = {m: [] for m in modes}
        for r in range(a.rounds):
            order = list(modes) if r % 2 == 0 else list(reversed(modes))
            for m in order:
                cmd, extra = modes[m]
                ns[m].append(run(cmd, dict(os.environ, OMP_NUM_THREADS="1", **extra)))
    for m, v in ns.items():
        print(f"{m:36s} {statistics.median(v):7.0f} ns per module call (median of {len(v)})")
    on, off = ns["gnnprof, module hooks on (default)"], ns["gnnprof, module hooks off"]
    diffs = sorted(x - y for x, y in zip(on, off))
    print(f"hooks: +{statistics.median(diffs):.0f} ns per module call (paired rounds: {diffs[0]:.0f}..{diffs[-1]:.0f})")


if __name__ == "__main__":
    sys.exit(main())
