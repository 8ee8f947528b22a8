"""A plain-PyTorch node-classification loop over torch's DataLoader, as many are written: a
map-style Dataset of seed nodes whose __getitem__ is called per sample (an inlined call in
CPython 3.11 once the subscript is specialized) and a collate_fn that samples neighbours and
gathers their features. No gnnprof import, no record_function.

usage: loader_loop.py STEPS [WORKERS] [--shuffle]"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

N, F, C, FANOUT, BATCH = 4096, 128, 4, 8, 64


class Seeds(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        node = (i * 7919) % N
        return node


def make_collate(feats, labels, nbrs):
    def collate(nodes):
        seeds = torch.tensor(nodes)
        hood = nbrs[seeds].flatten()
        x = feats.index_select(0, hood).view(len(nodes), FANOUT, F).mean(1)
        return x, labels[seeds]
    return collate


def setup():
    """The graph (features, labels, neighbour lists), the model and its optimizer."""
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(N, F, generator=gen)
    labels = torch.randint(0, C, (N,), generator=gen)
    nbrs = torch.randint(0, N, (N, FANOUT), generator=gen)
    model = torch.nn.Sequential(torch.nn.Linear(F, 64), torch.nn.ReLU(), torch.nn.Linear(64, C))
    return (feats, labels, nbrs), model, torch.optim.SGD(model.parameters(), lr=0.1)


def main():
    steps = int(sys.argv[1])
    workers = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 0
    graph, model, opt = setup()
    loader = DataLoader(Seeds(BATCH * steps), batch_size=BATCH, collate_fn=make_collate(*graph), num_workers=workers,
                        shuffle="--shuffle" in sys.argv[2:])
    n = 0
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        n += 1
        if n > len(loader):  # the loader asks the Dataset's __len__: not the data pipeline's work
            raise SystemExit("more batches than len(loader)")
    print("steps", n)


if __name__ == "__main__":
    main()
