"""A DataLoader loop whose per-sample work (__getitem__) is far slower than the model's step:
with worker processes the loop waits for them (loader-bound), without them it does the loading
itself (exposed data time). Plain PyTorch, no gnnprof import.

usage: slow_workers.py BATCHES WORKERS [EPOCHS] [START_METHOD]"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

BATCH = 64


class Slow(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = torch.full((256,), float(i % 7))
        for _ in range(20):
            x = torch.tanh(x * 1.01)
        return x, i % 4


def main():
    batches, workers = int(sys.argv[1]), int(sys.argv[2])
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    method = sys.argv[4] if len(sys.argv) > 4 else None  # spawn, forkserver: not a fork of the loop
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    n = 0
    loader = DataLoader(Slow(BATCH * batches), batch_size=BATCH, num_workers=workers,
                        multiprocessing_context=method if workers else None)
    for _ in range(epochs):  # each epoch forks its own workers
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            n += 1
    print("batches", n)


if __name__ == "__main__":
    main()
