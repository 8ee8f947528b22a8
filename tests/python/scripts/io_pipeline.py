"""A batch generator that reads each batch from "disk" (a 4 ms sleep stands in for the read)
and builds it with torch ops, feeding a small model: data time the loop waits, off the CPU.
No gnnprof import.

usage: io_pipeline.py STEPS"""
import sys
import time

import torch

torch.manual_seed(0)
torch.set_num_threads(1)
feats = torch.randn(8000, 64)


def batches(n):
    for _ in range(n):
        idx = torch.randint(0, 8000, (512,))
        time.sleep(0.004)  # the read
        yield feats[idx] * 2, torch.randint(0, 4, (512,))


model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in batches(int(sys.argv[1])):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
