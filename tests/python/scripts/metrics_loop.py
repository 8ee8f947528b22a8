"""A loop that samples its batch at the top and computes metrics after the step (accuracy, a
confusion matrix in a helper), as many scripts do; no gnnprof import.

usage: metrics_loop.py STEPS"""
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
N, D, C = 4000, 64, 20
x, y = torch.randn(N, D), torch.randint(0, C, (N,))
model = torch.nn.Sequential(torch.nn.Linear(D, 128), torch.nn.ReLU(), torch.nn.Linear(128, C))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


def confusion(pred, target):
    conf = torch.zeros(C, C, dtype=torch.long)
    conf.index_put_((target, pred), torch.ones_like(target), accumulate=True)
    return [(conf[c, c] / conf[c].sum().clamp(min=1)) for c in range(C)]


for step in range(int(sys.argv[1])):
    seeds = torch.randperm(N)[:1024]
    out = model(x[seeds])
    loss = F.cross_entropy(out, y[seeds])
    opt.zero_grad()
    loss.backward()
    opt.step()
    pred = out.argmax(1)
    acc = (pred == y[seeds]).float().mean()
    recall = confusion(pred, y[seeds])
with torch.no_grad():
    final = (model(x).argmax(1) == y).float().mean()
print("steps", step + 1)
