"""A process forked to train (multiprocessing.Process, fork) whose loop reads a DataLoader with
two worker processes: the workers are the child's, not the launcher's. No gnnprof import.

usage: forked_loader_training.py BATCH_SIZE"""
import multiprocessing
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset


def train(batch_size):
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(1024, 16), torch.randint(0, 2, (1024,)))
    model = torch.nn.Linear(16, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in DataLoader(ds, batch_size=batch_size, num_workers=2):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    p = multiprocessing.get_context("fork").Process(target=train, args=(int(sys.argv[1]),))
    p.start()
    p.join()
    print("exit code", p.exitcode)
