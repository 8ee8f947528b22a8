"""A TGN-like loop: node memory held in a module's buffer, read by a model method called
directly (not through the module's __call__) and written in place after each step; the batch's
node features come from a table that is never written. No gnnprof import.

usage: memory_loop.py STEPS"""
import sys

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
N, D = 20000, 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("memory", torch.zeros(N, D))
        self.lin = nn.Linear(2 * D, 1)

    def embed(self, nodes, feats):
        h = self.memory[nodes]
        return self.lin(torch.cat([h, feats], 1)).squeeze(1)


feat = torch.randn(N, D)
model = Model()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(int(sys.argv[1])):
    nodes = torch.randint(0, N, (2048,))
    x = feat[nodes]
    out = model.embed(nodes, x)
    loss = F.binary_cross_entropy_with_logits(out, torch.ones_like(out))
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        model.memory[nodes] = 0.9 * model.memory[nodes] + 0.1 * x
print("steps", step + 1)
