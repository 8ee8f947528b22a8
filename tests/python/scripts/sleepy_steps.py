"""A small model stepped every ~3 ms (a sleep stands in for other work): long enough a run for
gnnprof's threadless mode to drain at its iteration marks. No gnnprof import.

usage: sleepy_steps.py STEPS"""
import sys
import time

import torch

torch.manual_seed(0)
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 64)
for _ in range(int(sys.argv[1])):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.003)
print("done")
