"""A loop built to lose from prefetching: compute is many small torch ops (the loop's thread
needs the GIL for each) and the loader is pure Python (it holds the GIL while it runs). A
producer thread can only make the loop wait for the GIL. --prefetch K wraps the loader in
gnnprof.prefetch."""
import argparse
import random
import time

import torch

import gnnprof


def loader(steps, n):
    rng = random.Random(0)
    for _ in range(steps):
        values = [rng.random() for _ in range(n)]  # the loader's own Python: holds the GIL
        yield torch.tensor(values).view(-1, 64)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--prefetch", type=int, default=None)
    p.add_argument("--rows", type=int, default=64000)
    p.add_argument("--ops", type=int, default=200)
    a = p.parse_args()
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(64, 64) / 8)
    proj = torch.nn.Parameter(torch.randn(64, 64) / 8)
    opt = torch.optim.SGD([w, proj], lr=1e-6)
    depth = a.prefetch if a.prefetch is not None else gnnprof.resolve_depth(0)
    t0 = time.perf_counter()
    for x in gnnprof.prefetch(loader(a.steps, a.rows), depth=depth):
        h = x[:16] @ proj
        for _ in range(a.ops):
            h = torch.tanh(h @ w)  # compute: small ops, each dispatched from Python
        loss = h.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"loop_s {time.perf_counter() - t0:.4f}")


if __name__ == "__main__":
    main()
