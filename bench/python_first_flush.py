#!/usr/bin/python3
"""What a flush of the profile costs the host's thread: a few torch training steps, then
gnnprof.flush() timed three times (a step between each). Run it under gnnprof run with the
periodic flush off, so that the first timed flush is the process's first:

    GNNPROF_FLUSH_INTERVAL_MS=0 OMP_NUM_THREADS=1 build/cli/gnnprof run -o /tmp/f.json -- \\
        /usr/bin/python3 bench/python_first_flush.py"""
import time

import torch

import gnnprof

m = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(256, 64)


def step():
    loss = m(x).relu().sum()
    opt.zero_grad()
    loss.backward()
    opt.step()


for _ in range(3):
    step()
t = []
for _ in range(3):
    t0 = time.perf_counter_ns()
    gnnprof.flush()
    t.append((time.perf_counter_ns() - t0) / 1e3)
    step()
print("flush us", " ".join("%.0f" % v for v in t))
