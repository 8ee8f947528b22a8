#!/usr/bin/env python3
"""How fast each CPU this process may run on executes the same pure-Python loop.

The figures in docs/performance.md come from a 2-vCPU guest whose vCPUs have at times run at
different speeds. A single-threaded run lands on one of them by chance, so a figure taken
across processes can move by that ratio; a producer thread can "win" by running on the faster
one. This prints the median time per CPU and the ratio, rounds interleaved across CPUs."""
import argparse
import os
import statistics
import time


def work(n):
    acc = 0.0
    for i in range(n):
        acc = acc * 0.5 + (i & 63)
    return acc


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--n", type=int, default=2_000_000)
    a = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    times = {c: [] for c in cpus}
    for _ in range(a.rounds):
        for c in cpus:
            os.sched_setaffinity(0, {c})
            time.sleep(0.01)  # let the migration happen before the clock starts
            t0 = time.perf_counter()
            work(a.n)
            times[c].append(time.perf_counter() - t0)
    os.sched_setaffinity(0, cpus)
    med = {c: statistics.median(v) for c, v in times.items()}
    fastest = min(med.values())
    for c in cpus:
        print(f"cpu {c}: median {med[c] * 1e3:.1f} ms (min {min(times[c]) * 1e3:.1f}, max {max(times[c]) * 1e3:.1f}), "
              f"{med[c] / fastest:.2f}x the fastest")


if __name__ == "__main__":
    main()
