"""Features kept on disk in a float16 numpy memmap and gathered by node ids in a collate_fn,
as DGL's MAG240M example does (`torch.FloatTensor(self.feats[input_nodes])`): numpy runs no
torch op. With "cold", the file's pages are dropped from the page cache before the loop, so
the reads fault them in from storage. Plain PyTorch and numpy, no gnnprof import.

usage: memmap_features.py DIR STEPS WORKERS [cold]"""
import os
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader

N, F, B, FANOUT = 200000, 64, 128, 4


class Collate:
    def __init__(self, feats, labels):
        self.feats, self.labels = feats, labels

    def __call__(self, seeds):
        seeds = torch.tensor(seeds)
        nodes = torch.cat([seeds, (seeds[:, None] * 7919 + torch.arange(FANOUT) * 104729).flatten() % N])
        x = torch.from_numpy(self.feats[nodes.numpy()].astype(np.float32))
        first = self.feats[0]  # a row: a view, read later; no gather
        block = self.feats[100:110]  # a slice: the same
        return x, self.labels[seeds], float(first[0] + block[0, 0])


def main():
    path = os.path.join(sys.argv[1], "feats.npy")
    steps, workers = int(sys.argv[2]), int(sys.argv[3])
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(N, F))
    mm[:] = np.random.default_rng(0).standard_normal((N, F)).astype(np.float16)
    mm.flush()
    del mm
    if sys.argv[4:] == ["cold"]:
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    feats = np.load(path, mmap_mode="r")
    labels = torch.randint(0, 4, (N,), generator=torch.Generator().manual_seed(0))
    loader = DataLoader(range(steps * B), batch_size=B, collate_fn=Collate(feats, labels), num_workers=workers)
    model = torch.nn.Linear(F, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0.0
    for x, y, probe in loader:
        loss = torch.nn.functional.cross_entropy(model(x[: len(y)]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += probe
    print(f"steps {steps} probe {total:.3f}")


if __name__ == "__main__":
    main()
