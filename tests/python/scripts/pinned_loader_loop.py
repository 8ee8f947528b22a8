"""A plain training loop over a torch DataLoader with workers and pin_memory=True that copies each
batch to the GPU with non_blocking=True, as users write it (no gnnprof in it): zero-code
prefetch's pinned path where there is a device (scripts/gpu_new_paths.sh), a CPU loop elsewhere.
Prints each epoch's batch count and mean loss: the same with and without the prefetcher.

usage: pinned_loader_loop.py [EPOCHS] [WORKERS]"""
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    """Rows built one by one in the workers (a little Python per item, as a feature lookup)."""

    def __init__(self, n, dim):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, dim, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i] * 2.0 - 1.0, self.y[i]


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    loader = DataLoader(Rows(16384, 512), batch_size=512, num_workers=workers,
                        pin_memory=device.type == "cuda")
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(epochs):
        total, n = 0.0, 0
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            n += 1
        print(f"epoch {epoch}: {n} batches, loss {total / n:.5f}")


if __name__ == "__main__":
    main()
