"""A loop pulling from a traced generator that calls a traced helper, each line busy for a known
time: what runs under a statement (its nested_ns) and each line's caller, on every tracer.
Decorated with @profile (kernprof -b style); no torch.

usage: nested_calls.py N"""
import sys
import time


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@profile
def helper(i):
    busy(0.0004)
    return i


@profile
def batches(n):
    for i in range(n):
        busy(0.0002)
        yield helper(i)


@profile
def consume(n):
    total = 0
    for b in batches(n):
        busy(0.0003)
        total += b
    return total


print(consume(int(sys.argv[1])))
