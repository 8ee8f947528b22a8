"""A user module of untraced_callee.py: a busy-wait (imported, not run)."""
import time


def spin(seconds):
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass
