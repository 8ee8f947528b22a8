"""A DataLoader whose batches hold many small tensors (a dict of 24 fields), from 2 worker
processes that keep up with the loop: the loop's wait is receiving them, one tensor at a time.
Plain PyTorch, no gnnprof import.

usage: many_tensors_loader.py STEPS [SHARING_STRATEGY]"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

FIELDS = 24


class Fields(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return {f"f{k}": torch.full((8,), float(i + k)) for k in range(FIELDS)}


def main():
    steps = int(sys.argv[1])
    if len(sys.argv) > 2:
        torch.multiprocessing.set_sharing_strategy(sys.argv[2])
    torch.manual_seed(0)
    model = torch.nn.Linear(8 * FIELDS, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Fields(), batch_size=16, num_workers=2, prefetch_factor=4)
    for step, batch in enumerate(loader):
        if step == steps:
            break
        x = torch.cat([batch[f"f{k}"] for k in range(FIELDS)], 1)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.004)  # the rest of a step's work: the workers get ahead
    print("done", steps)


if __name__ == "__main__":
    main()
