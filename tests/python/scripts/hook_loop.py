"""Auto selection without torch: gnnprof._native.optimizer_step() stands where torch's observer
reports Optimizer.step. The step is called from a train_step helper: auto must trace the helper,
the loop that calls it (already running when selected) and the generator the loop pulls from,
and nothing else. With "while", the loop is a `while` loop (CPython 3.10 and 3.11 end it with a
conditional backward jump, not JUMP_BACKWARD). Runs under `gnnprof run` (the package is there)
on any CPython with a tracer."""
import sys

from gnnprof import _native


def batches(n):
    for i in range(n):
        x = [i] * 100
        yield x


def norm(x):
    return sum(x) / len(x)


def train_step(x):
    y = norm(x)
    _native.optimizer_step()
    return y


def train(epochs, n):
    total = 0.0
    for epoch in range(epochs):
        for x in batches(n):
            total += train_step(x)
        print("epoch", epoch, total)
    return total


def train_while(steps):
    total, step, it = 0.0, 0, batches(steps)
    while step < steps:
        total += train_step(next(it))
        step += 1
    print("steps", step, total)
    return total


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    if sys.argv[2:] == ["while"]:
        train_while(n)
    else:
        train(2, n)
