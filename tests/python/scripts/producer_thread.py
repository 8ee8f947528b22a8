"""A training loop fed by a prefetch thread of the user's own (threading + queue, as hand-written
GNN pipelines do): the thread samples neighbours and gathers their features. Plain PyTorch, no
gnnprof import.

usage: producer_thread.py STEPS"""
import queue
import sys
import threading

import torch
import torch.nn.functional as F

N, D, FANOUT, BATCH = 20000, 64, 10, 512


def sample(feats, nbrs, labels, seeds):
    hood = nbrs[seeds].flatten()
    x = feats[hood].view(len(seeds), FANOUT, D).mean(1)
    return x, labels[seeds]


def producer(q, graph, steps):
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        seeds = torch.randint(0, N, (BATCH,), generator=g)
        q.put(sample(*graph, seeds))
    q.put(None)


def train(steps):
    torch.manual_seed(0)
    graph = (torch.randn(N, D), torch.randint(0, N, (N, FANOUT)), torch.randint(0, 5, (N,)))
    model = torch.nn.Sequential(torch.nn.Linear(D, 128), torch.nn.ReLU(), torch.nn.Linear(128, 5))
    opt = torch.optim.Adam(model.parameters())
    q = queue.Queue(maxsize=4)
    t = threading.Thread(target=producer, args=(q, graph, steps), daemon=True)
    t.start()
    n = 0
    while True:
        batch = q.get()
        if batch is None:
            break
        x, y = batch
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += 1
    t.join()
    print("steps", n)
    return graph


def evaluate(feats, nbrs, labels):
    """After train() returned, on the loop's thread: gathers there are not a producer's."""
    seeds = torch.arange(0, N, 7)
    x = feats[nbrs[seeds].flatten()]
    return float(x.mean())


if __name__ == "__main__":
    print("eval", round(evaluate(*train(int(sys.argv[1]))), 6))
