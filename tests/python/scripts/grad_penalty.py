"""A gradient penalty (WGAN-GP style): torch.autograd.grad with create_graph inside the step, then
more forward work on the lines below it, then the loss's backward. No gnnprof import.

usage: grad_penalty.py STEPS"""
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
data, target = torch.randn(4096, 32), torch.randn(4096, 1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(int(sys.argv[1])):
    idx = torch.randint(0, 4096, (512,))
    x = data[idx].requires_grad_(True)
    out = model(x)
    g = torch.autograd.grad(out.sum(), x, create_graph=True)[0]
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean() * (g.abs() + 1).log().mean()
    loss = F.mse_loss(out, target[idx]) + 10 * penalty
    opt.zero_grad()
    loss.backward()
    opt.step()
print("steps", step + 1)
