"""DataLoader workers whose start is slow (a worker_init_fn that opens a dataset: here a sleep),
over three epochs: without persistent_workers each epoch starts them anew, and each epoch's
first batch waits for that. With VAL=1, a validation loader of its own (2 workers, started anew
at each pass too) is evaluated after each epoch. With CONTEXT=spawn the workers are spawned, with
no worker_init_fn: their start is the new interpreter's imports, before torch runs their loop.
Plain PyTorch, no gnnprof import.

usage: worker_restarts.py PERSISTENT(0|1) [EPOCHS] [BATCHES] [VAL(0|1)] [CONTEXT(fork|spawn)]"""
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


def slow_start(_worker_id):
    time.sleep(0.25)


def main():
    persistent = sys.argv[1] == "1"
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    batches = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    val = len(sys.argv) > 4 and sys.argv[4] == "1"
    spawn = len(sys.argv) > 5 and sys.argv[5] == "spawn"
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(32 * batches, 64), torch.randint(0, 4, (32 * batches,)))
    start = dict(multiprocessing_context="spawn") if spawn else dict(worker_init_fn=slow_start)
    loader = DataLoader(data, batch_size=32, num_workers=2, persistent_workers=persistent, **start)
    val_loader = DataLoader(TensorDataset(torch.randn(256, 64), torch.randint(0, 4, (256,))), batch_size=64, num_workers=2)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    n = 0
    for _ in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            n += 1
        if val:
            correct = 0
            with torch.no_grad():
                for x, y in val_loader:
                    correct += int((model(x).argmax(1) == y).sum())
            print("val", correct)
    print("batches", n)


if __name__ == "__main__":
    main()
