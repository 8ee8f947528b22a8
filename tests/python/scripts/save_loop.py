"""A training loop that writes a checkpoint every few steps with torch.save (imported by name,
as some scripts do), into a temporary directory.

usage: save_loop.py STEPS EVERY"""
import os
import sys
import tempfile

import torch
from torch import save

steps, every = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 8))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(512, 256), torch.randint(0, 8, (512,))
with tempfile.TemporaryDirectory() as tmp:
    for step in range(1, steps + 1):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % every == 0:
            save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, os.path.join(tmp, "ckpt.pt"))
    print("saved", len(os.listdir(tmp)), "file")
