#!/usr/bin/python3
"""Workload of bench/python_lines.py loader: tests/python/scripts/loader_loop.py's loop over
torch's DataLoader (a map-style Dataset whose __getitem__ runs per sample, a collate_fn that
samples neighbours and gathers their features), timed.

    loader_loop.py STEPS [--kernprof] [--workers N] [--sample-ops K]    prints "loop_s S" (the
    loop after its first 5 batches); --workers: the DataLoader's worker processes;
    --sample-ops: __getitem__ also runs K small torch ops per sample (a Dataset that transforms
    each sample with torch, whose workers the loop then waits for)
    --kernprof: line_profiler's @profile on train, Seeds.__getitem__ and collate (its way to see
    the lines gnnprof's auto selection traces)"""
import builtins
import os
import sys
import time

import torch
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python", "scripts"))
from loader_loop import BATCH, Seeds, make_collate, setup  # noqa: E402

WARMUP = 5
kernprof = getattr(builtins, "profile", None) if "--kernprof" in sys.argv else None
profile = kernprof or (lambda f: f)
if kernprof:
    Seeds.__getitem__ = kernprof(Seeds.__getitem__)


@profile
def train(loader, model, opt):
    t0 = None
    for n, (x, y) in enumerate(loader):
        if n == WARMUP:
            t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return time.perf_counter() - t0


class Transformed(Seeds):
    """Seeds whose __getitem__ also runs `ops` small torch ops per sample."""

    def __init__(self, n, ops):
        super().__init__(n)
        self.ops = ops

    def __getitem__(self, i):
        x = torch.full((64,), float(i % 7))
        for _ in range(self.ops):
            x = torch.tanh(x)
        return super().__getitem__(i)


def option(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main():
    steps, workers, ops = int(sys.argv[1]), option("--workers", 0), option("--sample-ops", 0)
    graph, model, opt = setup()
    n = BATCH * (steps + WARMUP)
    data = Transformed(n, ops) if ops else Seeds(n)
    if kernprof and ops:
        Transformed.__getitem__ = kernprof(Transformed.__getitem__)
    loader = DataLoader(data, batch_size=BATCH, collate_fn=profile(make_collate(*graph)), num_workers=workers)
    print(f"loop_s {train(loader, model, opt):.6f}")


if __name__ == "__main__":
    main()
