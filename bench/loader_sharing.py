#!/usr/bin/python3
"""What a DataLoader's worker processes cost the loop per tensor they send (docs/performance.md,
"Receiving batches from DataLoader workers"): the loop's wait at __next__ while 2 workers keep
ahead of it, for batches of K small CPU tensors (and one of K large ones), under
torch.multiprocessing's two sharing strategies, each case in a fresh process, the cases
interleaved over ROUNDS rounds. No gnnprof: this is torch's cost, which the loader-bound
diagnostic quotes per tensor.

    /usr/bin/python3 bench/loader_sharing.py --rounds 3
"""
import argparse
import statistics
import subprocess
import sys
import time


def case(k, n, strategy, batches=120):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Batches(Dataset):
        def __len__(self):
            return 1 << 20

        def __getitem__(self, i):
            return [torch.arange(n) + i for _ in range(k)]

    torch.multiprocessing.set_sharing_strategy(strategy)
    it = iter(DataLoader(Batches(), batch_size=None, num_workers=2, prefetch_factor=8))
    next(it)
    waits = []
    for _ in range(batches):
        time.sleep(0.004)  # the loop's step: the workers get ahead
        t = time.perf_counter()
        next(it)
        waits.append(time.perf_counter() - t)
    return statistics.median(waits)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--case", nargs=3, help=argparse.SUPPRESS)  # K N STRATEGY: one case, in this process
    a = ap.parse_args()
    if a.case:
        print(case(int(a.case[0]), int(a.case[1]), a.case[2]))
        return
    cases = [(k, 100, s) for k in (1, 4, 16, 64) for s in ("file_descriptor", "file_system")]
    cases += [(16, 100000, s) for s in ("file_descriptor", "file_system")]
    got = {c: [] for c in cases}
    for r in range(a.rounds):
        for c in (cases if r % 2 == 0 else reversed(cases)):
            out = subprocess.run([sys.executable, __file__, "--case", *map(str, c)], capture_output=True, text=True, check=True)
            got[c].append(float(out.stdout))
    print(f"loop's wait per batch at __next__, 2 workers ahead of it; median of {a.rounds} runs' medians")
    print(f"{'tensors':>8} {'elements':>9} {'strategy':>16} {'wait':>10} {'per tensor':>11}")
    for (k, n, s), v in got.items():
        w = statistics.median(v)
        print(f"{k:>8} {n:>9} {s:>16} {w * 1e6:>8.0f}us {w * 1e6 / k:>9.0f}us")


if __name__ == "__main__":
    main()
