"""A loop run by a real framework, skorch (Debian python3-skorch): the script calls net.fit(X, y)
and skorch loops, calling optimizer.step(closure) with the user's module's forward inside. No
gnnprof import, no record_function.

usage: skorch_loop.py EPOCHS"""
import sys

import numpy as np
import torch
from skorch import NeuralNetClassifier


class MLP(torch.nn.Module):
    def __init__(self, d=64, h=128, c=4):
        super().__init__()
        self.l1 = torch.nn.Linear(d, h)
        self.l2 = torch.nn.Linear(h, c)

    def forward(self, X):
        h = torch.relu(self.l1(X))
        return torch.softmax(self.l2(h), dim=-1)


def main(epochs):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2048, 64)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64) + 2 * (X[:, 1] > 0).astype(np.int64)
    net = NeuralNetClassifier(MLP, max_epochs=epochs, lr=0.1, batch_size=128, train_split=None, verbose=0)
    net.fit(X, y)
    print("accuracy", round(float((net.predict(X) == y).mean()), 1))


if __name__ == "__main__":
    main(int(sys.argv[1]))
