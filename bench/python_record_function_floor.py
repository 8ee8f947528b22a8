#!/usr/bin/python3
"""What torch's RecordFunction machinery alone costs the Python GNN sample's step: a do-nothing
observer (bench/record_function_floor.cpp, the torch observer's callbacks and muting, nothing
recorded) against RecordFunction off, in one process, blocks of steps interleaved. The floor
under any RecordFunction-based observer of this loop, gnnprof's and torch.profiler's alike.

    bench/python_record_function_floor.py --floor build/bench/librecord_function_floor.so [--rounds 30]

Modes: off; mute (muted inside top-level ops, as the observer); mute+optimizer (also inside the
optimizer's scopes, as the observer's folding); each with the op inputs boxed (needsInputs, as
the observer) unless --no-inputs."""
import argparse
import ctypes
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--floor", required=True, help="librecord_function_floor.so")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--no-inputs", action="store_true")
    a = ap.parse_args()
    import torch
    import python_inproc_overhead
    torch.set_num_threads(1)
    torch.manual_seed(0)
    step = python_inproc_overhead.sage()
    lib = ctypes.CDLL(os.path.abspath(a.floor))
    lib.floor_install(0 if a.no_inputs else 1)
    enable = torch._C._autograd._enable_record_function
    for _ in range(5):
        step()
    t0 = time.perf_counter()
    for _ in range(5):
        step()
    steps = max(3, int(0.3 / ((time.perf_counter() - t0) / 5)))
    modes = {"off": None, "mute": 2, "mute+optimizer": 3}

    def block(m):
        enable(modes[m] is not None)
        if modes[m] is not None:
            lib.floor_mode(modes[m])
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        return (time.perf_counter() - t0) / steps

    order = list(modes)
    times = python_inproc_overhead.interleaved_blocks(order, a.rounds, block)
    enable(True)
    print(f"Python GNN sample's step, {a.rounds} rounds x {steps} steps per mode, inputs "
          f"{'not ' if a.no_inputs else ''}boxed; off {1e3 * statistics.median(times['off']):.2f} ms/step")
    python_inproc_overhead.print_ratios(times, order, 15)

if __name__ == "__main__":
    main()
