"""The batch loop in a function called once per epoch, its `for` the function's first line, and
the evaluation in the caller (no gnnprof import).

usage: epoch_function.py EPOCHS BATCHES"""
import sys
import time

import torch


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def train_epoch(model, opt, batches):
    for _ in range(batches):
        x, y = torch.randn(128, 32), torch.randint(0, 4, (128,))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        busy(0.002)


def main(epochs, batches):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        train_epoch(model, opt, batches)
        busy(0.03)  # the evaluation
    print("done")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
