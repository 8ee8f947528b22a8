"""What a fork child's private-memory reading costs (/proc/self/smaps_rollup, which gnnprof
reads in DataLoader workers for loader-copy-on-write): the median of 20 reads in a child forked
from a process of torch plus N MiB of written anonymous memory, per N.

usage: /usr/bin/python3 bench/private_memory_reading.py [MIB ...]   (default: 0 256 1024 4096)"""
import os
import statistics
import sys
import time

import torch  # noqa: F401  (a worker's parent has torch mapped)


def child_reads(n=20):
    costs = []
    for _ in range(n):
        t = time.perf_counter()
        with open("/proc/self/smaps_rollup") as f:
            f.read()
        costs.append(time.perf_counter() - t)
    return statistics.median(costs)


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [0, 256, 1024, 4096]
    print("parent written MiB | parent RSS MiB | child read median (ms) | gnnprof's interval (s)")
    for mib in sizes:
        block = bytearray(mib << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        rss = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGESIZE") >> 20
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.write(w, repr(child_reads()).encode())
            os._exit(0)
        os.close(w)
        cost = float(os.read(r, 64))
        os.waitpid(pid, 0)
        print(f"{mib} | {rss} | {cost * 1e3:.2f} | {max(0.5, 100 * cost):.2f}")
        del block


if __name__ == "__main__":
    main()
