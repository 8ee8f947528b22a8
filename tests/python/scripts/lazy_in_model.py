"""DGL-style blocks whose source features are gathered lazily from the graph's feature table,
first touched inside the model's forward (blocks[0].srcdata["x"] in forward), not in the loop.
No gnnprof import.

usage: lazy_in_model.py STEPS"""
import sys

import torch

torch.manual_seed(0)
N, F = 20000, 64
FEATS = torch.randn(N, F)


class Block:
    def __init__(self, src):
        self.src = src
        self._x = None

    @property
    def srcdata(self):
        if self._x is None:
            self._x = {"x": FEATS[self.src]}
        return self._x


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(F, 4)

    def forward(self, block):
        h = block.srcdata["x"]
        return self.lin(h)


model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(int(sys.argv[1])):
    block = Block(torch.randint(0, N, (1024,)))
    y = torch.randint(0, 4, (1024,))
    loss = torch.nn.functional.cross_entropy(model(block), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("steps", step + 1)
