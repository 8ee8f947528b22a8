"""graphsage-simple's shape: the model's forward samples neighbours in plain Python (sets,
random.sample) before its ops, and the loop's one line `loss = model.loss(...)` holds it all.
No gnnprof import. Prints the last loss.

usage: python_in_model.py STEPS"""
import random
import sys

import torch
import torch.nn.functional as F
from torch import nn

random.seed(0)
torch.manual_seed(0)
N, D = 3000, 32
adj = [set(random.sample(range(N), 20)) for _ in range(N)]
feats = torch.randn(N, D)
labels = torch.randint(0, 4, (N,))


class Sage(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2 * D, 4)

    def sample(self, nodes):
        rows = []
        for n in nodes:
            picked = random.sample(sorted(adj[n]), 10)
            rows.append(sum(picked) % N)
        return rows

    def forward(self, nodes):
        neigh = self.sample(nodes)
        return self.lin(torch.cat([feats[nodes], feats[neigh]], dim=1))

    def loss(self, nodes):
        return F.cross_entropy(self(nodes), labels[nodes])


model = Sage()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(sys.argv[1])):
    nodes = random.sample(range(N), 512)
    loss = model.loss(nodes)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
