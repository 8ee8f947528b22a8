"""A training script shaped as many are: no gnnprof import, no record_function, the optimizer
called from a train_step helper, the loss read with .item() and an accuracy computed after the
step. Auto selection must find the loop that calls the helper, and the loader's ops after the
readback must be data."""
import sys

import torch
import torch.nn.functional as F


def batches(n, gen):
    for _ in range(n):
        x = torch.randn(256, 32, generator=gen)
        y = torch.randint(0, 4, (256,), generator=gen)
        yield x, y


def train_step(model, opt, x, y):
    opt.zero_grad()
    out = model(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
    return loss.item(), out


def train(model, opt, epochs, steps):
    gen = torch.Generator().manual_seed(0)
    for epoch in range(epochs):
        total, correct = 0.0, 0
        for x, y in batches(steps, gen):
            x = x * 2
            loss, out = train_step(model, opt, x, y)
            total += loss
            correct += int((out.argmax(1) == y).sum())
        print(f"epoch {epoch} loss {total / steps:.3f} correct {correct}")


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, opt, int(sys.argv[1]) if len(sys.argv) > 1 else 2, 20)


if __name__ == "__main__":
    main()
