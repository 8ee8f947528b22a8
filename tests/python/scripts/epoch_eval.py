"""Epochs of mini-batch training with an evaluation after each, as most GNN examples write them;
no gnnprof import. `inner`: the discriminator is stepped twice per batch in a loop of its own
inside the batch loop (the optimizer's innermost loop is then not the batch loop).

`optloop`: both optimizers stepped in a loop over them at each batch's end.

usage: epoch_eval.py plain|inner|optloop EPOCHS BATCHES
prints: train_s (the training loops' own time, evaluation excluded), eval_s"""
import sys
import time

import torch


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def evaluate(model, x):
    with torch.no_grad():
        model(x).argmax(1)
    busy(0.03)


def main(mode, epochs, batches):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    disc = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
    x_val = torch.randn(512, 32)
    train_s = eval_s = 0.0
    for epoch in range(epochs):
        t0 = time.perf_counter()
        for b in range(batches):
            x, y = torch.randn(128, 32), torch.randint(0, 4, (128,))
            if mode == "inner":
                for _ in range(2):
                    loss_d = disc(model(x).detach()).mean()
                    opt_d.zero_grad()
                    loss_d.backward()
                    opt_d.step()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            busy(0.002)
            if mode == "optloop":
                loss = loss + disc(model(x)).mean()
                opt_d.zero_grad()
                loss.backward()
                for o in (opt, opt_d):
                    o.step()
            else:
                loss.backward()
                opt.step()
        t1 = time.perf_counter()
        evaluate(model, x_val)
        train_s += t1 - t0
        eval_s += time.perf_counter() - t1
    print(f"train_s {train_s:.6f} eval_s {eval_s:.6f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
