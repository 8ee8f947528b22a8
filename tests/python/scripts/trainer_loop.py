"""A training loop written as a Trainer class, as many codebases do: train_epoch calls a step()
helper that runs forward, backward and the optimizer, then logs parameter norms (with grad
enabled) and the batch's accuracy; the batch's sampling stays at the loop's top. No gnnprof
import.

usage: trainer_loop.py STEPS"""
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
N, D, C = 4000, 64, 20


class Trainer:
    def __init__(self):
        self.x, self.y = torch.randn(N, D), torch.randint(0, C, (N,))
        self.model = torch.nn.Sequential(torch.nn.Linear(D, 128), torch.nn.ReLU(), torch.nn.Linear(128, C))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.log = []

    def step(self, xb, yb):
        out = self.model(xb)
        loss = F.cross_entropy(out, yb)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return out, loss

    def _log(self, out, yb):
        norms = torch.stack([p.norm() for p in self.model.parameters() for _ in range(20)])
        acc = (out.argmax(1) == yb).float().mean()
        self.log.append((norms.sum().item(), acc.item()))

    def train_epoch(self, steps):
        for _ in range(steps):
            seeds = torch.randperm(N)[:1024]
            out, loss = self.step(self.x[seeds], self.y[seeds])
            self._log(out, self.y[seeds])
        return loss


loss = Trainer().train_epoch(int(sys.argv[1]))
print("done", round(float(loss), 1) > -1)
