"""DataLoader workers that copy their parent's memory: the dataset keeps its samples as a
Python list of Python floats, and every read of one writes its reference count, so each worker
copies the pages it reads from the loop's process (copy-on-write). With KIND=tensor the same
values are one tensor, which reads leave shared.

usage: cow_workers.py [list|tensor] [EPOCHS]"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

ITEMS, CHUNK = 64, 90000


class Chunks(Dataset):
    def __init__(self, kind):
        n = ITEMS * CHUNK
        self.values = [float(i % 1000) for i in range(n)] if kind == "list" else torch.arange(n, dtype=torch.float64) % 1000

    def __len__(self):
        return ITEMS

    def __getitem__(self, i):
        part = self.values[i * CHUNK:(i + 1) * CHUNK]
        return torch.tensor(sum(part) if isinstance(part, list) else float(part.sum()))


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "list"
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    loader = DataLoader(Chunks(kind), batch_size=4, num_workers=2)
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-9)
    total = 0.0
    for _ in range(epochs):
        for x in loader:
            opt.zero_grad()
            loss = model(x.unsqueeze(1)).sum()
            loss.backward()
            opt.step()
            total += float(x.sum())
    print(f"total {total:.1f}")


if __name__ == "__main__":
    main()
