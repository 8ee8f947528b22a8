"""How often `gnnprof check` fails identical code (A/A), and how often it catches a known
slowdown, with 1, 3 or 6 runs per side.

  /usr/bin/python3 bench/check_runs.py pool DIR ROUNDS   # profile ROUNDS rounds, interleaved
  /usr/bin/python3 bench/check_runs.py eval DIR K TRIALS # check K runs vs K runs, TRIALS draws

A round runs, in a shuffled order, the loop below twice unchanged ("base") and once with a sleep
of 20 % of an iteration in its forward ("slow20") and of 5 % ("slow5"). `eval` draws disjoint
sets of K base profiles for A/A and K base vs K slowed ones, runs `gnnprof check` (one file per
--baseline) and counts exit code 1."""
import glob
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("GNNPROF_CLI", os.path.join(HERE, "..", "build", "cli", "gnnprof"))
PY = "/usr/bin/python3"


def loop(steps, sleep_ms):
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    n, d = 20000, 128
    x, y = torch.randn(n, d), torch.randint(0, 10, (n,))
    model = torch.nn.Sequential(torch.nn.Linear(d, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        idx = torch.randint(0, n, (2048,))
        xb, yb = x[idx], y[idx]
        out = model(xb)
        if sleep_ms:
            time.sleep(sleep_ms / 1000)
        loss = F.cross_entropy(out, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()


def pool(out, rounds):
    os.makedirs(out, exist_ok=True)
    # The injected sleeps are shares of the unchanged loop's median iteration, timed once here.
    t0 = time.perf_counter()
    loop(20, 0)
    it_ms = (time.perf_counter() - t0) * 1000 / 20
    kinds = {"base_a": 0, "base_b": 0, "slow20": 0.2 * it_ms, "slow5": 0.05 * it_ms}
    for r in range(rounds):
        order = list(kinds)
        random.shuffle(order)
        for k in order:
            name = os.path.join(out, f"{k.split('_')[0]}_{r}_{k}.json")
            subprocess.run([CLI, "run", "-o", name, "--", PY, __file__, "loop", "40", str(kinds[k])],
                           env={**os.environ, "GNNPROF_QUIET": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=False)
        print(f"round {r + 1}/{rounds}", flush=True)


def evaluate(out, k, trials):
    base = sorted(glob.glob(os.path.join(out, "base_*.json")))
    rng = random.Random(1)

    def check(b, c):
        args = [CLI, "check"]
        for f in b:
            args += ["--baseline", f]
        return subprocess.run(args + c, capture_output=True, text=True).returncode

    for kind in ("base", "slow20", "slow5"):
        fails = 0
        for _ in range(trials):
            if kind == "base":
                s = rng.sample(base, 2 * k)
                b, c = s[:k], s[k:]
            else:
                b, c = rng.sample(base, k), rng.sample(sorted(glob.glob(os.path.join(out, kind + "_*.json"))), k)
            fails += check(b, c) == 1
        print(f"{kind:7s} {k} run(s) per side: check failed {fails} of {trials}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "loop":
        loop(int(sys.argv[2]), float(sys.argv[3]))
    elif sys.argv[1] == "pool":
        pool(sys.argv[2], int(sys.argv[3]))
    else:
        evaluate(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
