"""Activation checkpointing around each layer (torch.utils.checkpoint, imported by name as
users do): backward runs each layer's forward again."""
import sys

import torch
from torch.utils.checkpoint import checkpoint

steps, reentrant = int(sys.argv[1]), sys.argv[2] == "reentrant"
torch.manual_seed(0)
layers = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh()) for _ in range(3))
opt = torch.optim.SGD(layers.parameters(), lr=1e-3)
x = torch.randn(2048, 256, requires_grad=True)
for _ in range(steps):
    h = x
    for layer in layers:
        h = checkpoint(layer, h, use_reentrant=reentrant)
    loss = h.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
