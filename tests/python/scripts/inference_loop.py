"""An inference loop: no optimizer, no backward; batches from a DataLoader, a feature gather
per batch, the model under no_grad. Prints its accuracy."""
import sys

import torch
from torch.utils.data import DataLoader

batches = int(sys.argv[1])
torch.manual_seed(0)
feats = torch.randn(50000, 64)
labels = (feats[:, 0] > 0).long()
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2)).eval()


def evaluate(loader):
    correct = total = 0
    with torch.no_grad():
        for ids in loader:
            x = feats[ids]
            pred = model(x).argmax(1)
            correct += int((pred == labels[ids]).sum())
            total += ids.numel()
    return correct / total


loader = DataLoader(torch.arange(batches * 4096), batch_size=4096, shuffle=True)
print(f"accuracy {evaluate(loader):.3f}")
