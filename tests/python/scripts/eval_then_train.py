"""An evaluation over a DataLoader before training (a sanity check), then the training loop
over the same loader: the training loop is the traced loop and its iterations the run's."""
import sys

import torch
from torch.utils.data import DataLoader

steps = int(sys.argv[1])
torch.manual_seed(0)
feats = torch.randn(20000, 32)
labels = (feats[:, 0] > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.arange(steps * 512), batch_size=512)


def evaluate():
    correct = 0
    with torch.no_grad():
        for ids in loader:
            correct += int((model(feats[ids]).argmax(1) == labels[ids]).sum())
    return correct


def train():
    for ids in loader:
        loss = torch.nn.functional.cross_entropy(model(feats[ids]), labels[ids])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


print("before", evaluate())
print(f"loss {train():.3f}")
