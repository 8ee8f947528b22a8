"""Gathers that are and are not feature reads, in one loop: feature rows by an index tensor
(a materialization, its bytes exact), and an edge index's columns by a boolean mask, an
integer neighbour table's rows and a feature table's columns (none is a feature read).

usage: mask_gathers.py STEPS"""
import sys

import torch

torch.manual_seed(0)
N, F = 20000, 64
feats = torch.randn(N, F)
edge_index = torch.randint(0, N, (2, 200000))
nbrs = torch.randint(0, N, (N, 10))
lin = torch.nn.Linear(F, 1)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
for step in range(int(sys.argv[1])):
    seeds = torch.randint(0, N, (512,))
    keep = edge_index[0] < N // 2
    sub = edge_index[:, keep]
    hood = nbrs[seeds]
    wide = feats[:, torch.arange(F) < F // 2]
    x = feats[seeds]
    loss = lin(x).sum() + 0 * (sub.sum() + hood.sum() + wide.sum())
    opt.zero_grad()
    loss.backward()
    opt.step()
print("steps", step + 1)
