"""Two epochs over gnnprof.prefetch on the CPU, torch at 2 intra-op threads: prints the threads
compute had at each batch and after each epoch (GNNPROF_PREFETCH_THREADS picks the split)."""
import sys

import torch

import gnnprof


def batches(n):
    for _ in range(n):
        x = torch.randn(256, 64)
        yield x, (x.sum(1) > 0).long()


def main(depth):
    torch.set_num_threads(2)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    class Batches:  # re-iterable: a new pass each epoch, as a DataLoader
        def __iter__(self):
            return batches(24)

    loader = gnnprof.prefetch(Batches(), depth=depth)
    for epoch in range(2):
        seen = []
        for x, y in loader:
            seen.append(torch.get_num_threads())
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: during {sorted(set(seen))} after {torch.get_num_threads()}")
    # Leaving an epoch early also gives the threads back.
    for i, _ in enumerate(loader):
        seen = torch.get_num_threads()
        if i == 3:
            break
    del _
    print(f"in the broken pass {seen}")
    print(f"after break {torch.get_num_threads()}")


if __name__ == "__main__":
    main(int(sys.argv[1]))
