"""A torch loop with the package's own stage around its feature gather and its own iteration
mark (gnnprof.step()) beside the optimizer's step: after opt.step(), or at the loop's top."""
import sys

import gnnprof
import torch

steps = int(sys.argv[1])
at_top = "--step-at-top" in sys.argv
torch.manual_seed(0)
feats = torch.randn(20000, 64)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0
for i in range(steps):
    if at_top:
        gnnprof.step()
    ids = torch.randint(0, feats.shape[0], (4096,))
    with gnnprof.stage("load", "data"):
        x = feats[ids]
        y = (x[:, 0] > 0).long()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss.item()
    if not at_top:
        gnnprof.step()
print(f"loss {total / steps:.4f}")
