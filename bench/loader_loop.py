#!/usr/bin/python3
"""Workload of bench/python_lines.py loader: a node-classification loop over torch's
DataLoader, a map-style Dataset whose __getitem__ runs per sample and a collate_fn that samples
neighbours and gathers their features (tests/python/scripts/loader_loop.py's shape).

    loader_loop.py STEPS [--kernprof]    prints "loop_s S" (the loop after its first 5 batches)
    --kernprof: @profile on train, Seeds.__getitem__ and collate (line_profiler's way to see
    the lines gnnprof's auto selection traces)"""
import builtins
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

N, F, C, FANOUT, BATCH, WARMUP = 4096, 128, 4, 8, 64, 5
profile = getattr(builtins, "profile", None) if "--kernprof" in sys.argv else None
profile = profile or (lambda f: f)


class Seeds(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    @profile
    def __getitem__(self, i):
        node = (i * 7919) % N
        return node


def make_collate(feats, labels, nbrs):
    @profile
    def collate(nodes):
        seeds = torch.tensor(nodes)
        hood = nbrs[seeds].flatten()
        x = feats.index_select(0, hood).view(len(nodes), FANOUT, F).mean(1)
        return x, labels[seeds]
    return collate


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
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(N, F, generator=gen)
    labels = torch.randint(0, C, (N,), generator=gen)
    nbrs = torch.randint(0, N, (N, FANOUT), generator=gen)
    model = torch.nn.Sequential(torch.nn.Linear(F, 64), torch.nn.ReLU(), torch.nn.Linear(64, C))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Seeds(BATCH * (steps + WARMUP)), batch_size=BATCH,
                        collate_fn=make_collate(feats, labels, nbrs))
    print(f"loop_s {train(loader, model, opt):.6f}")


if __name__ == "__main__":
    main()
