#!/usr/bin/python3
"""Workload of bench/python_lines.py loader: tests/python/scripts/loader_loop.py's loop over
torch's DataLoader (a map-style Dataset whose __getitem__ runs per sample, a collate_fn that
samples neighbours and gathers their features), timed.

    loader_loop.py STEPS [--kernprof] [--workers N]    prints "loop_s S" (the loop after its
    first 5 batches); --workers: the DataLoader's worker processes
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


def main():
    steps = int(sys.argv[1])
    workers = int(sys.argv[sys.argv.index("--workers") + 1]) if "--workers" in sys.argv else 0
    graph, model, opt = setup()
    loader = DataLoader(Seeds(BATCH * (steps + WARMUP)), batch_size=BATCH, collate_fn=profile(make_collate(*graph)),
                        num_workers=workers)
    print(f"loop_s {train(loader, model, opt):.6f}")


if __name__ == "__main__":
    main()
