"""Auto selection through a library's iterator, without torch: the loop pulls its batches
through `progress.bar` (scripts/site-packages/progress.py, a tqdm stand-in that gnnprof takes for
library code), as `for b in tqdm(loader)` does. Auto must trace the user's generator created
before the loop was found and the class-based iterator (the shape of a hand-written
prefetcher) that the bar pulls from, and nothing else of the user's. The step is announced
through the package's hook (gnnprof._native.optimizer_step), so this runs on any CPython with a
tracer. Needs scripts/site-packages on PYTHONPATH."""
import sys

import progress
from gnnprof import _native


def batches(n):
    for i in range(n):
        x = [i] * 100
        yield x


class Prefetcher:
    """One batch ahead, as the data_prefetcher of the seed's script."""

    def __init__(self, source):
        self.source = iter(source)
        self.ahead = next(self.source, None)

    def __iter__(self):
        return self

    def __next__(self):
        batch = self.ahead
        if batch is None:
            raise StopIteration
        self.ahead = next(self.source, None)  # the one after
        return batch


def helper_sum(n):
    """A user function the loop calls: not selected (its time is the calling line's)."""
    total = 0
    for i in range(n):
        total += i
    return total


def train(n):
    total = 0
    gen = batches(n)  # made before the loop is found: the bar pulls it, not the loop
    for x in progress.bar(gen):
        total += sum(x)
        _native.optimizer_step()
    with progress.bar(Prefetcher(batches(n))) as tq:
        for i, x in enumerate(tq):
            total += len(x)
            _native.optimizer_step()
    print("total", total, helper_sum(3))


if __name__ == "__main__":
    train(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
