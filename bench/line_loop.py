#!/usr/bin/python3
"""Workloads of bench/python_lines.py, kernprof-style (@profile, a no-op without a profiler).

    line_loop.py cost N       a pure-Python function of many cheap lines, N iterations of 5
                              lines: prints "loop_s S line_events E"
    line_loop.py accuracy R   lines that busy-wait 2, 1 and 0.5 ms and time themselves, R
                              rounds: prints each line's own total ("own LINE NS HITS")
    line_loop.py calls N      N calls of a one-line function that nothing selects: prints
                              "loop_s S calls N" (the frame hook's cost per unselected frame)
    line_loop.py tcalls N     the same calls from a traced (@profile) function: what a traced
                              line's untraced callees cost
"""
import builtins
import sys
import time

profile = getattr(builtins, "profile", None) or (lambda f: f)


@profile
def hot(n):
    a = 0
    for i in range(n):
        a += 1
        a -= 1
        a += i
        a ^= 1
    return a


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


OWN = {}


def timed(line, seconds):
    t0 = time.perf_counter_ns()
    spin(seconds)
    OWN.setdefault(line, []).append(time.perf_counter_ns() - t0)


@profile
def waits(rounds):
    for _ in range(rounds):
        timed("two", 0.002)
        timed("one", 0.001)
        timed("half", 0.0005)


def leaf(x):
    return x + 1


def calls(n):
    for i in range(n):
        leaf(i)


@profile
def traced_calls(n):
    for i in range(n):
        leaf(i)


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    if mode in ("calls", "tcalls"):
        t0 = time.perf_counter()
        (calls if mode == "calls" else traced_calls)(n)
        print(f"loop_s {time.perf_counter() - t0:.6f} calls {n}")
    elif mode == "cost":
        t0 = time.perf_counter()
        hot(n)
        print(f"loop_s {time.perf_counter() - t0:.6f} line_events {5 * n + 2}")
    else:
        waits(n)
        for line, v in OWN.items():
            print(f"own {line} {sum(v)} {len(v)}")


if __name__ == "__main__":
    main()
