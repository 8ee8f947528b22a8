"""A generator selected (gnnprof.profile) while it is suspended inside a `yield from` over a C
iterator: each resume goes on mid-statement, with no line event, so its time is the `yield
from` line's, without a new hit (the hit was before tracing began).

usage: yield_from.py"""
import time

import gnnprof


def work(i):
    time.sleep(0.002)
    return i


def batches(n):
    total = 0
    yield from map(work, range(n))
    total += 1
    yield total


g = batches(20)
first = next(g)  # suspended inside the yield from, not traced
gnnprof.profile(batches)
rest = list(g)
print(first, len(rest))
