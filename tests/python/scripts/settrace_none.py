"""A loop that switches tracing off, as a debugger's `continue` or a library ending its own
tracer does: sys.settrace(None), directly and after a trace function of its own. No torch.

usage: settrace_none.py [STEPS]"""
import sys
import time


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def train(steps):
    for i in range(steps):
        spin(0.002)  # two
        if i == 3:
            sys.settrace(None)
        if i == 6:
            sys.settrace(lambda frame, event, arg: None)
            sys.settrace(None)
        spin(0.001)  # one
    return steps


print("steps", train(int(sys.argv[1]) if len(sys.argv) > 1 else 12))
