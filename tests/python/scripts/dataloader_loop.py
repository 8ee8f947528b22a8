"""A plain PyTorch training loop over a torch DataLoader, with no gnnprof in it: what zero-code
prefetch (GNNPROF_PREFETCH_LOADERS=1) wraps. It prints each epoch's batch count and a checksum
of its batches, in order, and the loss: the same with and without the prefetcher.
MODE: own (the script's own `for` over the loader), library (a framework's generator pulls the
loader: scripts/site-packages on PYTHONPATH), break (each epoch stops after 5 batches), dgl (a
library's DataLoader subclass with an __iter__ of its own, graphloader.GraphLoader: DGL's shape),
subclass and generator (the script's own subclass, whose __iter__ returns super().__iter__() or
yields from it, shifted), mixin (its __iter__ from a mixin class that is no DataLoader, which the
script also iterates on its own: it yields the mixin's, unwrapped).

usage: dataloader_loop.py EPOCHS [own|library|break|dgl|subclass|generator|mixin]"""
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class OwnLoader(DataLoader):
    def __iter__(self):
        return super().__iter__()


class YieldingLoader(DataLoader):
    def __iter__(self):
        for x, y in super().__iter__():
            yield x + 1.0, y


class Shifted:
    """A mixin: its __iter__ shifts what the next class's yields."""

    def __iter__(self):
        for x, y in super().__iter__():
            yield x - 1.0, y


class Counter:
    def __iter__(self):
        return iter([(torch.ones(2), 0)])


class Steps(Shifted, Counter):
    pass


class MixinLoader(Shifted, DataLoader):
    pass


class Rows(Dataset):
    def __len__(self):
        return 16 * 24

    def __getitem__(self, i):
        x = torch.full((64,), float(i % 13))
        for _ in range(4):
            x = torch.tanh(x * 1.01 + 0.1)
        return x, i % 5


def main():
    epochs = int(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "own"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 5))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    kind = DataLoader
    if mode == "dgl":
        import graphloader
        kind = graphloader.GraphLoader
    elif mode in ("subclass", "generator", "mixin"):
        kind = {"subclass": OwnLoader, "generator": YieldingLoader, "mixin": MixinLoader}[mode]
    loader = kind(Rows(), batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(1))
    if mode == "library":
        import minitrain
        batches = lambda: minitrain.each_batch(loader)
    else:
        batches = lambda: loader
    total = 0.0
    for epoch in range(epochs):
        n, check = 0, 0.0
        for x, y in batches():
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total += float(loss)
            n += 1
            check += float(x.sum()) * n
            if mode == "break" and n == 5:
                break
        print(f"epoch {epoch}: {n} batches, checksum {check:.3f}")
        if mode == "mixin":
            print("steps", [float(x.sum()) for x, _ in Steps()])
    print(f"loss {total:.4f}")


if __name__ == "__main__":
    main()
