"""A training loop with no optimizer and no DataLoader, as tutorials write one: batches from a
list, the weights updated by hand under no_grad after each backward. Prints the last loss."""
import sys

import torch

epochs, batches = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
X = torch.randn(batches * 64, 32)
Y = (X[:, 0] > 0).long()
W1 = torch.randn(32, 64, requires_grad=True)
W2 = torch.randn(64, 2, requires_grad=True)
data = [(X[i : i + 64], Y[i : i + 64]) for i in range(0, len(X), 64)]


def train(lr=0.01):
    for epoch in range(epochs):
        for x, y in data:
            loss = torch.nn.functional.cross_entropy(torch.relu(x @ W1) @ W2, y)
            loss.backward()
            with torch.no_grad():
                for w in (W1, W2):
                    w -= lr * w.grad
                    w.grad.zero_()
    return float(loss)


print(f"loss {train():.4f}")
