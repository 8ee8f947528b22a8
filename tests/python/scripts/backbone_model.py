"""A user module defining the frozen backbone of frozen_backbone.py (imported, not run)."""
from torch import nn


class Backbone(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.inp = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, 4 * d)

    def forward(self, x):
        h = self.inp(x).relu()
        return self.out(h).relu()
