#!/usr/bin/python3
"""What gnnprof's wrappers of threading.Condition.wait (python/gnnprof/_producer_waits.py) and
Condition.notify (python/gnnprof/_producers.py) cost a hand-over (docs/performance.md, "Waits
for the program's own producers").

Under `gnnprof run --lines none` (the package and its hooks in, no tracer): the main thread and
a producer thread pass a token back and forth through two queue.Queue(maxsize=1), so that each
round trip blocks both once in Condition.wait: the main thread's wait is recorded (the stage
"producer wait"), the producer's passes through after its thread check. Blocks of round trips
alternate between the wrapper installed and the original it wraps (`__wrapped__`). Prints the
median round trip of each and the difference.

`--hand-over`: both wrappers swapped together (each round trip also makes four notify calls:
two puts, two gets), under `--lines auto` with the loop found on the main thread first (the
test trigger of auto selection), so that the producer thread's first put selects its function
as a producer's and every later notify on it takes the path a producer thread's does.

`--join`: threading.Thread.start and Thread.join swapped together, under `--lines auto` with the
loop found: each round trip starts a thread (marked as the loop's) and joins it (the join
recorded as a producer wait; its target selected as a producer's at the first, looked at again
at each).

`--pipe`: a multiprocessing Connection's recv and send (both ends of two one-way Pipes, between
the main thread and a second one) swapped together, under `--lines auto` with the loop found:
the main thread's recv is recorded as a producer wait, the other thread's first send selects its
function as a producer's.

    /usr/bin/python3 bench/producer_waits.py --gnnprof build/cli/gnnprof --rounds 20 [--hand-over | --join | --pipe]
"""
import argparse
import sys
import tempfile
import threading

import hook_blocks

TRIPS = 2000


def say(what, plain, wrapped, q1, q3):
    print(f"round trip ({what})  original {plain * 1e6:7.2f} us  wrapped {wrapped * 1e6:7.2f} us  "
          f"difference {(wrapped - plain) * 1e6:+.2f} us (quartiles {q1 * 1e6:+.2f}..{q3 * 1e6:+.2f})")


def joins(rounds):
    import gnnprof
    gnnprof._native.optimizer_step()  # this function is the loop, found on this thread
    start, raw_start = hook_blocks.wrapped(threading.Thread.start, "threading.Thread.start")
    join, raw_join = hook_blocks.wrapped(threading.Thread.join, "threading.Thread.join")

    def work():
        pass

    def trip(fns, i):
        if i == 0:
            threading.Thread.start, threading.Thread.join = fns
        t = threading.Thread(target=work)
        t.start()
        t.join()

    plain, wrapped, q1, q3 = hook_blocks.alternate((start, join), (raw_start, raw_join), trip, rounds, TRIPS // 4)
    threading.Thread.start, threading.Thread.join = start, join
    print(f"producer functions selected: {gnnprof._native.stats()['producers']}")
    say("a thread started and joined", plain, wrapped, q1, q3)


def pipes(rounds):
    import multiprocessing.connection as mc
    import gnnprof
    gnnprof._native.optimizer_step()  # this function is the loop, found on this thread
    names = ("recv", "recv_bytes", "send", "send_bytes")
    pairs = [hook_blocks.wrapped(getattr(mc._ConnectionBase, n), "Connection." + n) for n in names]
    hooked, original = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    ask_r, ask_w = mc.Pipe(duplex=False)
    answer_r, answer_w = mc.Pipe(duplex=False)

    def producer():
        while True:
            token = ask_r.recv()
            if token is None:
                return
            answer_w.send(token)

    t = threading.Thread(target=producer, daemon=True)
    t.start()

    def install(fns):
        for n, fn in zip(names, fns):
            setattr(mc._ConnectionBase, n, fn)

    def trip(fns, i):
        if i == 0:
            install(fns)
        ask_w.send(i)
        answer_r.recv()

    plain, wrapped, q1, q3 = hook_blocks.alternate(hooked, original, trip, rounds, TRIPS)
    install(hooked)
    ask_w.send(None)
    t.join()
    print(f"producer functions selected: {gnnprof._native.stats()['producers']}")
    say("2 recv, 2 send", plain, wrapped, q1, q3)


def child(rounds, hand_over):
    import queue
    hooked, original = hook_blocks.wrapped(threading.Condition.wait, "threading.Condition.wait")
    if hand_over:
        import gnnprof
        gnnprof._native.optimizer_step()  # this function is the loop, found on this thread
        notify, raw_notify = hook_blocks.wrapped(threading.Condition.notify, "threading.Condition.notify")
        hooked, original = (hooked, notify), (original, raw_notify)
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
        if hand_over:
            threading.Condition.wait, threading.Condition.notify = fn
        else:
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
    what = "2 blocking waits, 4 notify" if hand_over else "2 blocking waits"
    if hand_over:
        import gnnprof
        print(f"producer functions selected: {gnnprof._native.stats()['producers']}")
    say(what, plain, wrapped, q1, q3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gnnprof", default="build/cli/gnnprof")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--hand-over", action="store_true", help="the notify wrapper too, the loop found (--lines auto)")
    ap.add_argument("--join", action="store_true", help="Thread.start and Thread.join, the loop found (--lines auto)")
    ap.add_argument("--pipe", action="store_true", help="a Connection's recv and send, the loop found (--lines auto)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        if a.pipe:
            pipes(a.rounds)
        elif a.join:
            joins(a.rounds)
        else:
            child(a.rounds, a.hand_over)
        return 0
    args = ["--child", "--rounds", str(a.rounds)] + (["--hand-over"] if a.hand_over else []) + (["--join"] if a.join else []) + (["--pipe"] if a.pipe else [])
    with tempfile.TemporaryDirectory() as d:
        return hook_blocks.under_gnnprof(a.gnnprof, __file__, args, d, "auto" if a.hand_over or a.join or a.pipe else "none")


if __name__ == "__main__":
    sys.exit(main())
