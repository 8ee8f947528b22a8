"""Writes to stdout and stderr and exits 5: its output and exit code must be the same under gnnprof."""
import sys


def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


print("stdout line", work(1000))
sys.stderr.write("stderr line\n")
sys.stdout.flush()
sys.exit(5)
