"""A training script as users write it: no gnnprof import, no record_function. A generator
yields batches; `train()` calls the optimizer (the loop gnnprof's auto selection finds)."""
import sys

import torch
import torch.nn.functional as F


def batches(n, gen):
    for _ in range(n):
        x = torch.randn(256, 64, generator=gen)
        y = torch.randint(0, 8, (256,), generator=gen)
        yield x, y


def evaluate(model):
    with torch.no_grad():
        return model(torch.randn(64, 64)).sum().item()


def train(model, opt, steps):
    gen = torch.Generator().manual_seed(0)
    for x, y in batches(steps, gen):
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    print(f"loss {train(model, opt, steps):.4f}")
    print(f"eval {evaluate(model):.4f}")


if __name__ == "__main__":
    main()
