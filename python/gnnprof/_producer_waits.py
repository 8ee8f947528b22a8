"""The loop's waits for batches that the program's own threads or processes make ahead of it.

A hand-written pipeline feeds the loop from a thread pool (`futures[i].result()`), a thread and
a `queue.Queue` (`q.get()`), an `Event`, or sampler processes and a `multiprocessing.Queue`.
The loop blocked there is exposed data time, yet no torch op and no Python runs: left alone it
was "batch prep (Python)", taken for the loop's own Python holding the GIL, and a prefetcher
was advised where the program already prefetches and its producer cannot keep up.

Every blocking wait of the loop's thread in `threading.Condition.wait` (Queue.get,
Future.result, Event.wait, Barrier.wait and Condition.wait_for call it) and in
`multiprocessing.Queue.get` is the data stage "producer wait" (reports: a wait that a
prefetcher does not hide, and the producer-bound rule). The loop's thread: where auto selection
found the loop (its first optimizer step: waits before it are before the loop's first
iteration), else the main thread (no auto selection, or no tracer).
Not counted: waits under torch's DataLoader (its own stage) and gnnprof's prefetcher
(loader_wait), a thread's start, a wait with a zero timeout, other threads' waits (a producer
waiting for room, a main thread waiting for a training thread once the loop is found there),
and every wait while no session runs.
"""
import os
import sys
import threading

from . import _attach

STAGE = "producer wait"  # reports/src/analysis.cpp: is_data_wait


def _stdlib_waiters():
    """The standard library's directories and files whose frames sit between a wait and its
    caller (without importing them: the program may never)."""
    lib = os.path.dirname(threading.__file__)
    return (os.path.join(lib, "concurrent") + os.sep, os.path.join(lib, "multiprocessing") + os.sep), \
        (threading.__file__, os.path.join(lib, "queue.py"))


def install(native, api, config):
    """Wraps threading.Condition.wait and multiprocessing's Queue.get once per process (a
    reloaded package or a fork finds them wrapped; multiprocessing's once it is imported).
    Returns what was done, for the tests."""
    if not config.flag("GNNPROF_PRODUCER_WAITS", True):
        native.note_collector("producer-waits", False, "GNNPROF_PRODUCER_WAITS=0")
        return "off"
    state = api._state
    stage = native.Stage(STAGE, "data")
    dirs, files = _stdlib_waiters()
    skip = (os.path.join("torch", "utils", "data") + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep)
    noted = [False]
    os.register_at_fork(after_in_child=lambda: noted.__setitem__(0, False))  # a child's own profile says it too
    main_thread, getframe = threading.main_thread, sys._getframe

    def counted(depth):
        """Whether the wait whose caller is `depth` frames up is the training loop's (its thread
        once auto selection found it, the main thread until then), for work the program's own
        threads or processes do."""
        if not state["bound"] or not native.is_running():
            return False
        loop = native.loop_thread()  # 1 here, 0 elsewhere, -2 not yet found, -1 no auto selection
        if loop == 0 or loop == -2 or (loop == -1 and threading.current_thread() is not main_thread()):
            return False
        f = getframe(depth)
        while f is not None:
            name = f.f_code.co_filename
            if name.startswith(dirs) or name in files:
                if name == threading.__file__ and f.f_code.co_name == "start":
                    return False  # Thread.start waits for the thread to run
                f = f.f_back
                continue
            return not any(s in name for s in skip)
        return False

    def note():
        noted[0] = True
        native.note_collector("producer-waits", True, "the training loop's blocking waits for the program's own threads "
                              "or processes (Queue.get, Future.result, Event.wait: threading.Condition.wait; "
                              "multiprocessing Queue.get) are the data stage \"producer wait\"")

    def waited(original, blocking, *args):
        try:
            on = blocking and counted(3)
        except Exception:  # never into the host's wait
            on = False
        if not on:
            return original(*args)
        if not noted[0]:
            note()
        with stage:
            return original(*args)

    done = []
    cls, original, why = _attach.method_to_wrap("threading", "Condition", "wait", "no threading.Condition.wait")
    if cls is not None:
        def wait(self, timeout=None):
            return waited(original, timeout != 0, self, timeout)
        _attach.replace_method(cls, "wait", wait, original)
        done.append("Condition.wait")
    elif why == "installed":
        done.append("Condition.wait")

    def wrap_queue_get():
        cls, original, _ = _attach.method_to_wrap("multiprocessing.queues", "Queue", "get", "no Queue.get")
        if cls is None:
            return

        def get(self, block=True, timeout=None):
            return waited(original, block and timeout != 0, self, block, timeout)
        _attach.replace_method(cls, "get", get, original)

    _attach.after_import("multiprocessing.queues", wrap_queue_get)
    done.append("multiprocessing Queue.get (once imported)")
    return ", ".join(done) or "none"
