#!/usr/bin/python3
"""The frame hook's per-call cost for a user function under auto selection, against a rejected
one, in one process (run under `gnnprof run`, lines auto).

    build/cli/gnnprof run -o /tmp/u.json -- /usr/bin/python3 bench/python_user_calls.py [--rounds 40] [--n 200000]

Since auto selection also takes the user code a data loader calls, every user function is a
candidate: each call of one looks at its caller's mark. `one_a` is first seen with auto on (a
candidate), `one_b` with auto off (rejected: one check); both are called from untraced
functions, in alternating blocks. Prints each one's ns per call and the median difference."""
import argparse
import statistics
import time

import torch
from gnnprof import _native


def one_a(x):
    return x


def one_b(x):
    return x


def run_a(n):
    t0 = time.perf_counter()
    for i in range(n):
        one_a(i)
    return time.perf_counter() - t0


def run_b(n):
    t0 = time.perf_counter()
    for i in range(n):
        one_b(i)
    return time.perf_counter() - t0


def step():
    m = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    m(torch.randn(1, 2)).sum().backward()
    opt.step()  # auto selection: the hook goes in here


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--n", type=int, default=200000)
    a = ap.parse_args()
    step()
    if not _native.stats()["installed"]:
        raise SystemExit("run this under `gnnprof run` with lines auto")
    run_a(10)
    _native.set_auto(False)
    run_b(10)
    ra, rb = [], []
    for _ in range(a.rounds):
        ra.append(run_a(a.n))
        rb.append(run_b(a.n))
    d = sorted((x - y) / a.n * 1e9 for x, y in zip(ra, rb))
    lo, hi = d[len(d) // 4], d[3 * len(d) // 4]
    print(f"candidate {statistics.median(ra) / a.n * 1e9:.1f} ns/call, rejected {statistics.median(rb) / a.n * 1e9:.1f} "
          f"ns/call, difference {statistics.median(d):+.1f} ns (p25..p75 {lo:+.1f}..{hi:+.1f}), {a.rounds} rounds")


if __name__ == "__main__":
    main()
