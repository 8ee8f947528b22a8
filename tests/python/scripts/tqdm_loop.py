"""The seed's loop shape with the real tqdm (Debian python3-tqdm): `with tqdm.tqdm(loader) as tq:
for step, batch in enumerate(tq)`, tq.set_postfix with loss.item() each step. "loader": tqdm over
torch's DataLoader, whose collate_fn gathers features; "prefetcher": tqdm over a hand-written
data_prefetcher (the seed's class shape) that pulls index batches from the DataLoader and
gathers the features in its __next__. No gnnprof import, no record_function.

usage: tqdm_loop.py loader|prefetcher STEPS"""
import sys

import torch
import tqdm
from torch.utils.data import DataLoader

N, F, C, BATCH = 4096, 64, 4, 128


class data_prefetcher:
    def __init__(self, loader, feats, labels):
        self.loader = iter(loader)
        self.feats, self.labels = feats, labels

    def __iter__(self):
        return self

    def __next__(self):
        seeds = next(self.loader)
        x = self.feats[seeds]
        return x, self.labels[seeds]


def main(mode, steps):
    gen = torch.Generator().manual_seed(0)
    feats = torch.randn(N, F, generator=gen)
    labels = torch.randint(0, C, (N,), generator=gen)
    seeds = torch.randint(0, N, (steps * BATCH,), generator=gen)

    def collate(nodes):
        idx = torch.stack(nodes)
        return feats[idx], labels[idx]

    model = torch.nn.Sequential(torch.nn.Linear(F, 64), torch.nn.ReLU(), torch.nn.Linear(64, C))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if mode == "loader":
        batches = DataLoader(seeds, batch_size=BATCH, collate_fn=collate)
    else:
        batches = data_prefetcher(DataLoader(seeds, batch_size=BATCH), feats, labels)
    with tqdm.tqdm(batches, disable=True) as tq:
        for step, (x, y) in enumerate(tq):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tq.set_postfix({"loss": "%.4f" % loss.item()}, refresh=False)
    print("steps", step + 1)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
