"""A training loop with no optimizer and no DataLoader, as tutorials write one: batches from a
list, a model whose forward loops over its layers, the weights updated by hand under no_grad
after each backward. Prints the last loss."""
import sys

import torch

epochs, batches = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
X = torch.randn(batches * 64, 32)
Y = (X[:, 0] > 0).long()
data = [(X[i : i + 64], Y[i : i + 64]) for i in range(0, len(X), 64)]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(32, 64), torch.nn.Linear(64, 64), torch.nn.Linear(64, 2)])

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


model = Net()


def train(lr=0.01):
    for epoch in range(epochs):
        for x, y in data:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            with torch.no_grad():
                for w in model.parameters():
                    w -= lr * w.grad
                    w.grad.zero_()
    return float(loss)


print(f"loss {train():.4f}")
