"""A recursive function whose every call busy-waits 0.2 ms; prints the outermost call's time.
The garbage collector is off: a collection (~1 ms on 3.10, set off by the statement map's
parse of the first traced call) lands on whichever line allocates a frame then, and moves with
any change in what the process allocated before.

usage: recursion_busy.py DEPTH"""
import gc
import sys
import time


def busy(seconds):
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass


def walk(d):
    busy(0.0002)
    if d == 0:
        return 0
    return walk(d - 1) + 1


gc.disable()
t0 = time.perf_counter_ns()
walk(int(sys.argv[1]))
print("walk_ns", time.perf_counter_ns() - t0)
