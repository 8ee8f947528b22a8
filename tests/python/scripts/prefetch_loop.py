"""A loop over gnnprof.prefetch(batches()): its loader_wait is exposed, the producer's work hidden."""
import sys
import time

import torch

import gnnprof


def batches(n):
    for _ in range(n):
        time.sleep(0.004)  # the loader's work
        x = torch.randn(128, 32)
        yield x, (x.sum(1) > 0).long()


def main(depth):
    torch.set_num_threads(1)
    model = torch.nn.Linear(32, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in gnnprof.prefetch(batches(30), depth=depth):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.004)  # more compute
    print("done")


if __name__ == "__main__":
    main(int(sys.argv[1]))
