#!/usr/bin/python3
"""What gnnprof's wrapper of threading.Condition.wait (python/gnnprof/_producer_waits.py) costs
a wait (docs/performance.md, "Waits for the program's own producers").

Under `gnnprof run --lines none` (the package and its hooks in, no tracer): the main thread and
a producer thread pass a token back and forth through two queue.Queue(maxsize=1), so that each
round trip blocks both once in Condition.wait: the main thread's wait is recorded (the stage
"producer wait"), the producer's passes through after its thread check. Blocks of round trips
alternate between the wrapper installed and the original it wraps (`__wrapped__`). Prints the
median round trip of each and the difference.

    /usr/bin/python3 bench/producer_waits.py --gnnprof build/cli/gnnprof --rounds 20
"""
import argparse
import sys
import tempfile
import threading

import hook_blocks

TRIPS = 2000


def child(rounds):
    import queue
    hooked, original = hook_blocks.wrapped(threading.Condition.wait, "threading.Condition.wait")
    ask, answer = queue.Queue(maxsize=1), queue.Queue(maxsize=1)

    def producer():
        while True:
            token = ask.get()
            if token is None:
                return
            answer.put(token)

    t = threading.Thread(target=producer, daemon=True)
    t.start()

    def install(fn):
        threading.Condition.wait = fn

    def trip(fn, i):
        if i == 0:
            install(fn)
        ask.put(i)
        answer.get()

    plain, wrapped, q1, q3 = hook_blocks.alternate(hooked, original, trip, rounds, TRIPS)
    install(hooked)
    ask.put(None)
    t.join()
    print(f"round trip (2 blocking waits)  original {plain * 1e6:7.2f} us  wrapped {wrapped * 1e6:7.2f} us  "
          f"difference {(wrapped - plain) * 1e6:+.2f} us (quartiles {q1 * 1e6:+.2f}..{q3 * 1e6:+.2f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gnnprof", default="build/cli/gnnprof")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.rounds)
        return 0
    with tempfile.TemporaryDirectory() as d:
        return hook_blocks.under_gnnprof(a.gnnprof, __file__, ["--child", "--rounds", str(a.rounds)], d)


if __name__ == "__main__":
    sys.exit(main())
