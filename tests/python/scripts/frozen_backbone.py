"""A frozen backbone under a trained head: the model's call is most of the loop. The backbone is
torch's own nn.Sequential ("torch") or a module of the user's (backbone_model.py, "user").
No gnnprof import. Prints the last loss.

usage: frozen_backbone.py torch|user STEPS"""
import sys

import torch
import torch.nn.functional as F
from torch import nn

from backbone_model import Backbone

torch.manual_seed(0)
D = 256
if sys.argv[1] == "user":
    backbone = Backbone(D)
else:
    backbone = nn.Sequential(nn.Linear(D, 4 * D), nn.ReLU(), nn.Linear(4 * D, 4 * D), nn.ReLU())
for p in backbone.parameters():
    p.requires_grad_(False)
model = nn.Sequential(backbone, nn.Linear(4 * D, 8))
opt = torch.optim.SGD(model[1].parameters(), lr=0.1)
x = torch.randn(512, D)
y = torch.randint(0, 8, (512,))
for step in range(int(sys.argv[2])):
    out = model(x)
    loss = F.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
