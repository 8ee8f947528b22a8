"""A loop whose neighbour sampler is numpy (no torch op): its time is data only by where it
runs, between the loop's header and its forward line, or (`gen`) in the batch generator the
loop pulls from.

usage: numpy_sampler.py STEPS [gen]"""
import sys

import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(0)
N, E = 50000, 500000
indptr = np.sort(rng.integers(0, E, N + 1))
indptr[0], indptr[-1] = 0, E
indices = rng.integers(0, N, E)
feats = torch.randn(N, 64)
labels = torch.randint(0, 8, (N,))


def sample(seeds, fanout=10):
    starts, ends = indptr[seeds], indptr[seeds + 1]
    deg = np.maximum(ends - starts, 1)
    off = (rng.random((len(seeds), fanout)) * deg[:, None]).astype(np.int64)
    return indices[np.minimum(starts[:, None] + off, E - 1)]


model = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def batches(n):
    for _ in range(n):
        ids = rng.integers(0, N, 1024)
        yield ids, sample(ids)


GEN = sys.argv[2:] == ["gen"]
for step in range(0 if GEN else int(sys.argv[1])):
    seeds = rng.integers(0, N, 1024)
    nbrs = sample(seeds)
    x = torch.cat([feats[torch.from_numpy(seeds)], feats[torch.from_numpy(nbrs)].mean(1)], 1)
    loss = F.cross_entropy(model(x), labels[torch.from_numpy(seeds)])
    opt.zero_grad()
    loss.backward()
    opt.step()
for seeds, nbrs in batches(int(sys.argv[1]) if GEN else 0):
    x = torch.cat([feats[torch.from_numpy(seeds)], feats[torch.from_numpy(nbrs)].mean(1)], 1)
    loss = F.cross_entropy(model(x), labels[torch.from_numpy(seeds)])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
