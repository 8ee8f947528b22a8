"""A streaming pipeline as users write it: an IterableDataset whose __iter__ samples neighbour
batches with numpy and splits them across DataLoader workers with get_worker_info
(batch_size=None), a TorchScript model, Adam. Plain PyTorch, no gnnprof import.

usage: iterable_stream.py [WORKERS] [BATCHES]"""
import sys
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

N, F, C = 20000, 64, 8


class NeighborStream(IterableDataset):
    def __init__(self, indptr, indices, feats, labels, batches, batch_size=256, fanout=10):
        self.indptr, self.indices, self.feats, self.labels = indptr, indices, feats, labels
        self.batches, self.batch_size, self.fanout = batches, batch_size, fanout

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        rng = np.random.default_rng(wid)
        for b in range(wid, self.batches, nw):
            seeds = rng.integers(0, N, self.batch_size)
            starts, ends = self.indptr[seeds], self.indptr[seeds + 1]
            nbrs = np.concatenate([self.indices[s:e][: self.fanout] for s, e in zip(starts, ends)])
            nodes = np.unique(np.concatenate([seeds, nbrs]))
            x = self.feats[torch.from_numpy(nodes)]
            yield x, self.labels[torch.from_numpy(seeds)], torch.from_numpy(np.searchsorted(nodes, seeds))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(F, 128)
        self.l2 = torch.nn.Linear(128, C)

    def forward(self, x, idx):
        h = torch.relu(self.l1(x))
        return self.l2(h[idx])


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    torch.manual_seed(0)
    deg = np.random.default_rng(0).integers(1, 30, N)
    indptr = np.concatenate([[0], np.cumsum(deg)])
    indices = np.random.default_rng(1).integers(0, N, indptr[-1])
    feats, labels = torch.randn(N, F), torch.randint(0, C, (N,))
    loader = DataLoader(NeighborStream(indptr, indices, feats, labels, batches), batch_size=None, num_workers=workers)
    model = torch.jit.script(Net())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    total = 0.0
    for x, y, idx in loader:
        out = model(x, idx)
        loss = torch.nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += float(loss)
    print(f"done {total:.3f}")


if __name__ == "__main__":
    main()
