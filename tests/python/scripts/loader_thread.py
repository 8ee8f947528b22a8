"""A training loop fed through a queue.Queue by a thread of the program's own that iterates a
torch DataLoader (a hand-written prefetch thread around it). Each item sleeps 0.2 ms in
__getitem__, so that WORKERS worker processes (0: the thread loads itself) cannot keep up with
the light model. Plain PyTorch, no gnnprof import.

usage: loader_thread.py WORKERS [BATCHES]"""
import queue
import sys
import threading
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(0.0002)
        return torch.full((64,), float(i % 7)), i % 5


def producer(loader, q):
    for batch in loader:
        q.put(batch)
    q.put(None)


def main(workers, batches):
    torch.manual_seed(0)
    loader = DataLoader(Slow(64 * batches), batch_size=64, num_workers=workers, persistent_workers=workers > 0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 5))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    q = queue.Queue(maxsize=4)
    threading.Thread(target=producer, args=(loader, q), daemon=True).start()
    total = 0.0
    while (batch := q.get()) is not None:
        x, y = batch
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"loss {total:.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 48)
