"""A loop whose forward runs under torch.autocast (CPU, bfloat16): autocast's casting kernel
is the outermost one of its ops, so their top-level record carries no sequence number."""
import sys

import torch

steps = int(sys.argv[1])
torch.manual_seed(0)
x = torch.randn(2048, 256)
model = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 16))
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
for _ in range(steps):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
        loss = out.float().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
