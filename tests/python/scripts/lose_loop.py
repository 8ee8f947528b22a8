"""A loop built to lose from prefetching: both the loader and the loop's compute are the
script's own Python, which holds the GIL while it runs. A producer thread cannot overlap
anything with the loop; it can only make the loop wait for the GIL. (Compute made of torch ops
would not do: each op releases the GIL while its kernel runs, and a producer's Python can fill
those gaps, so such a loop wins or loses by a race.) --prefetch K wraps the loader in
gnnprof.prefetch."""
import argparse
import random
import time

import torch

import gnnprof


def loader(steps, n):
    rng = random.Random(0)
    for _ in range(steps):
        row = [0.0] * 64
        for i in range(n):
            row[i & 63] += rng.random()  # the loader's own Python: holds the GIL
        yield torch.tensor(row).view(1, 64)


def mix(row, rounds):
    acc = 0.0
    for _ in range(rounds):
        for v in row:
            acc = acc * 0.5 + v  # the loop's own Python: holds the GIL too
    return acc


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--prefetch", type=int, default=None)
    p.add_argument("--draws", type=int, default=64000)
    p.add_argument("--rounds", type=int, default=1500)
    a = p.parse_args()
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(64, 64) / 8)
    opt = torch.optim.SGD([w], lr=1e-6)
    depth = a.prefetch if a.prefetch is not None else gnnprof.resolve_depth(0)
    t0 = time.perf_counter()
    for x in gnnprof.prefetch(loader(a.steps, a.draws), depth=depth):
        s = mix(x[0].tolist(), a.rounds)  # compute: pure Python
        loss = (x @ w).pow(2).mean() * (s / (1.0 + abs(s)))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"loop_s {time.perf_counter() - t0:.4f}")


if __name__ == "__main__":
    main()
