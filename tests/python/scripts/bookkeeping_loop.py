"""A loop whose batches come from a generator that samples in plain Python between torch ops,
and which does plain-Python bookkeeping (a 2 ms busy wait) right after making its labels.
No gnnprof import.

usage: bookkeeping_loop.py STEPS"""
import random
import sys
import time

import torch


def busy(seconds):
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass


def neighbours(rng, n):
    return [rng.randrange(n) for _ in range(10000)]


def batches(steps, feats):
    rng = random.Random(0)
    for _ in range(steps):
        ids = torch.randperm(feats.shape[0])[:256]
        picked = [rng.randrange(feats.shape[0]) for _ in range(20000)]  # plain-Python sampling
        hops = neighbours(rng, feats.shape[0])  # a helper of the pipeline's
        more = [rng.random() for _ in range(20000)]  # and plain Python after it returned
        yield feats[ids], len(picked) + len(hops) + len(more)


def main(steps):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    feats = torch.randn(4096, 32)
    model = torch.nn.Linear(32, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, n in batches(steps, feats):
        y = torch.randint(0, 4, (x.shape[0],))
        busy(0.002)  # logging, bookkeeping: not data loading
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("done", steps)


if __name__ == "__main__":
    main(int(sys.argv[1]))
