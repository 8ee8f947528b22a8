"""Training in processes forked by multiprocessing (Hogwild's shape): a Pool's workers square
numbers first (a process pool of the program's own), then the parent builds a shared model, and two Processes
train it, one through a target function, one through a subclass's run(); the first then forks
a bare child (os.fork), which records nothing. No gnnprof import.

usage: forked_training.py STEPS [parent]  (parent: the launcher trains too, first)"""
import multiprocessing
import os
import sys

import torch


def square(x):
    return x * x


def train(seed, model, steps, bare_fork=False):
    torch.manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    X, Y = torch.randn(1024, 32), torch.randint(0, 2, (1024,))
    for _ in range(steps):
        idx = torch.randint(0, 1024, (64,))
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(X[idx]), Y[idx]).backward()
        opt.step()
    if bare_fork:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)


class Trainer(multiprocessing.Process):
    def __init__(self, model, steps):
        super().__init__()
        self.model, self.steps = model, steps

    def run(self):
        train(1, self.model, self.steps)


if __name__ == "__main__":
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        print("squares", sum(pool.map(square, range(10))))
    steps = int(sys.argv[1])
    model = torch.nn.Linear(32, 2)
    model.share_memory()
    if sys.argv[2:] == ["parent"]:
        train(2, model, steps)
    procs = [ctx.Process(target=train, args=(0, model, steps, True)), Trainer(model, steps // 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("exit codes", [p.exitcode for p in procs])
