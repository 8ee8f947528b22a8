"""A loop pulling its batches through prefetch_generator's BackgroundGenerator (a library's
thread runs the user's generator ahead of the loop and hands its items over through a
queue.Queue; the stand-in under site-packages/), with `bar` through a tqdm-like bar too. The
generator samples neighbours and gathers features with numpy alone. With `loader`, the library
pulls a torch DataLoader instead (the common `DataLoaderX.__iter__` override) whose Dataset
runs a Python loop per item: on the library's thread it holds the GIL, and the loop's forward
waits for it. Plain PyTorch, no gnnprof import.

usage: background_generator.py STEPS [bar|loader]"""
import sys

import numpy as np
import progress
import torch
import torch.nn.functional as F
from prefetch_generator import BackgroundGenerator

N, D, FANOUT, BATCH = 20000, 64, 10, 512
_rng = np.random.default_rng(0)
FEATS = _rng.standard_normal((N, D), dtype=np.float32)
NBRS = _rng.integers(0, N, (N, FANOUT))
LABELS = _rng.integers(0, 5, N)


def batches(steps):
    rng = np.random.default_rng(1)
    for _ in range(steps):
        seeds = rng.integers(0, N, BATCH)
        hop2 = NBRS[NBRS[seeds].reshape(-1)].reshape(-1)
        uniq, inv = np.unique(hop2, return_inverse=True)
        yield FEATS[uniq][inv].reshape(BATCH, FANOUT * FANOUT, D).mean(1), LABELS[seeds]


class Items(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        s = 0.0
        for k in range(2000):  # per-item Python (parsing, augmenting): it holds the GIL
            s += k * 0.5
        return torch.from_numpy(FEATS[i % N]), int(LABELS[i % N])


def main(steps, mode):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(D, 128), torch.nn.ReLU(), torch.nn.Linear(128, 5))
    opt = torch.optim.Adam(model.parameters())
    bar = mode == "bar"
    if mode == "loader":
        loader = BackgroundGenerator(iter(torch.utils.data.DataLoader(Items(64 * steps), batch_size=64)))
    else:
        loader = BackgroundGenerator(batches(steps), max_prefetch=4)
    n = 0
    for x, y in progress.bar(loader) if bar else loader:
        loss = F.cross_entropy(model(torch.as_tensor(x)), torch.as_tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += 1
    print("steps", n)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "")
