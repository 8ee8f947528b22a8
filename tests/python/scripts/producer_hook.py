"""A producer thread without torch: gnnprof.record_materialization() stands for a gather on the
producer thread, gnnprof._native.optimizer_step() for torch's Optimizer.step on the loop's. Auto
selection must trace the loop and, once it is found, the producer's function that gathers, on
any CPython with a tracer (3.12+ included, where this machine has no torch).

usage: producer_hook.py ITEMS"""
import queue
import sys
import threading

import gnnprof
from gnnprof import _native


def gather(i):
    rows = [i] * 64
    gnnprof.record_materialization(len(rows), 4096)
    return rows


def producer(q, n):
    for i in range(n):
        q.put(gather(i))
    q.put(None)


def train(n):
    q = queue.Queue(maxsize=2)
    t = threading.Thread(target=producer, args=(q, n), daemon=True)
    t.start()
    total = 0
    while True:
        rows = q.get()
        if rows is None:
            break
        total += sum(rows)
        _native.optimizer_step()
    t.join()
    print("total", total)


if __name__ == "__main__":
    train(int(sys.argv[1]))
