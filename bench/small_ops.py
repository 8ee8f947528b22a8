#!/usr/bin/python3
"""Small-op training loop (a 3-layer MLP on 64-row batches: ~30 ops per step, each a few us)
for the zero-code overhead bar. Prints the loop's wall time. --torch-profiler wraps the loop
in torch.autograd.profiler.profile(), the anchor users compare against. --iteration-times also
prints the time of each block of 100 steps ("iteration_s ..."), for bench/python_overhead.py's
--per-iteration estimator: every run does the same work in block i."""
import sys, time, torch
torch.set_num_threads(1)
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                        torch.nn.Linear(64, 4))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
steps = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 2000

BLOCK = 100
ends = []

def loop(record=False):
    for i in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
        if record and i % BLOCK == BLOCK - 1:
            ends.append(time.perf_counter())

loop()  # warm-up outside the timing
blocks = "--iteration-times" in sys.argv
t0 = time.perf_counter()
if "--torch-profiler" in sys.argv:
    with torch.autograd.profiler.profile():
        loop(blocks)
else:
    loop(blocks)
print(f"loop_s {time.perf_counter() - t0:.4f}")
if blocks:
    print("iteration_s", " ".join(f"{b - a:.6f}" for a, b in zip([t0] + ends, ends)))
