"""The program's stages around the whole loop (a decorator), inside the model's forward, and
one that outlives a record_function begun before it (as torch.profiler's step scope ends at
prof.step() inside a stage)."""
import sys

import gnnprof
import torch

steps = int(sys.argv[1])
torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(64, 64), torch.nn.Linear(64, 4)

    def forward(self, x):
        h = self.a(x)
        with gnnprof.stage("attention"):
            h = torch.softmax(h, 1) * h
        return self.b(h)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@gnnprof.stage("train")
def train():
    total = 0.0
    for _ in range(steps):
        x = torch.randn(512, 64)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    return total


print(f"{train():.4f}")
outer = torch.autograd.profiler.record_function("outer")
outer.__enter__()
inner = gnnprof.stage("inner")
inner.__enter__()
outer.__exit__(None, None, None)  # ends inside the stage begun after it
torch.randn(8).sum()
inner.__exit__(None, None, None)
print("done")
