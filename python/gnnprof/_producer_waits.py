"""The loop's waits for batches that the program's own threads or processes make ahead of it.

A hand-written pipeline feeds the loop from a thread pool (`futures[i].result()`), a thread and
a `queue.Queue` (`q.get()`), an `Event`, a thread started for the next batch and joined
(`t.join()`), or sampler processes and a `multiprocessing.Queue`.
The loop blocked there is exposed data time, yet no torch op and no Python runs: left alone it
was "batch prep (Python)", taken for the loop's own Python holding the GIL, and a prefetcher
was advised where the program already prefetches and its producer cannot keep up.

`threading.Condition.wait` (under every blocking wait of threading, queue and
concurrent.futures) and `multiprocessing.queues.Queue.get` are wrapped. A blocking wait is the
data stage "producer wait" (reports: a wait that a prefetcher does not hide, and the
producer-bound rule) when all of these hold:
- it runs on the loop's thread: where auto selection found the loop (its first optimizer step:
  waits before it are before the loop's first iteration), else the main thread (no auto
  selection, or no tracer);
- the program's own code called it (the first frame outside the standard library is in no
  third-party package: not torch's DataLoader, DGL's prefetching iterator or gnnprof's
  prefetcher, which have their own stages, nor a library's flush or compile queue), or a
  third-party iterator the program pulls from did (prefetch_generator's BackgroundGenerator:
  the user's generator it holds is then traced on the library's thread);
- it is a consumer's wait, the call the program made being one of CONSUMER_WAITS (Queue.get,
  Future.result, Event.wait, concurrent.futures.wait, an Executor's map, a Pool's map or a result's get,
  multiprocessing's Queue.get) or Condition.wait / wait_for itself; not a Queue.put waiting for room, a join or
  a Semaphore;
- its timeout is None or positive.
multiprocessing's SimpleQueue.get too (it waits on a pipe, not a Condition), a `Pipe`'s
`Connection.recv`/`recv_bytes` where the program's own code called it, and
`threading.Thread.join` where the program's own code called it on a thread the loop's thread
started (it waits on a lock): the loop joining such a thread waits for that thread's work, and
the thread's target is then traced in the threads started after.
Not seen: a C `queue.SimpleQueue`, Manager proxies and Event, asyncio. Nothing is counted while no session runs.
"""
import functools
import os
import sys
import threading
import types

from . import _attach

STAGE = "producer wait"  # reports/src/analysis.cpp: is_data_wait


# The standard library's calls a consumer makes to wait for a producer, by the file under the
# standard library's directory and the function's name.
CONSUMER_WAITS = {
    "queue.py": ("get",),
    "threading.py": ("wait", "wait_for"),  # Event, Barrier, Condition
    # result_iterator: Executor.map's results; _chain_from_iterable_of_lists: ProcessPoolExecutor.map's
    os.path.join("concurrent", "futures", "_base.py"): ("result", "exception", "wait", "as_completed", "result_iterator"),
    os.path.join("concurrent", "futures", "process.py"): ("_chain_from_iterable_of_lists",),
    os.path.join("multiprocessing", "pool.py"): ("get", "wait", "next", "map", "starmap", "apply"),
    os.path.join("multiprocessing", "queues.py"): ("get",),
}


# Set on a Thread that the loop's thread started once the loop was found (_producers.py): its
# join is a wait for the program's producer, its target the producer's function.
LOOP_STARTED = "_gnnprof_started_by_loop"


def code_of(fn):
    """The code object a callable runs first: a function's, through partials and bound methods."""
    for _ in range(8):
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            fn = fn.__func__
        else:
            break
    return fn.__code__ if isinstance(fn, types.FunctionType) else None


STDLIB = os.path.dirname(threading.__file__) + os.sep
PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep  # gnnprof's own code
PACKAGES = ("/site-packages/", "/dist-packages/")  # third-party code


def users_code(code):
    """Whether `code` is of the user's files: not the standard library's, a package's or gnnprof's."""
    name = code.co_filename
    return not name.startswith(STDLIB) and not name.startswith(PACKAGE) and not any(p in name for p in PACKAGES)


def stdlib_caller(frame):
    """Whether `frame` runs the standard library's code (a Queue's get or its feeder thread, a
    Pool's handlers: their own use of a Connection)."""
    return frame.f_code.co_filename.startswith(STDLIB)


def static_code(cls, name, stop=None):
    """The code of the Python method `name` that class `cls` has (through its bases, up to
    `stop`), looked up without running the host's code; None where it is none or C."""
    for k in cls.__mro__:
        if k is stop:
            return None
        f = k.__dict__.get(name)
        if f is not None:
            return f.__code__ if isinstance(f, types.FunctionType) else None
    return None


# Packages whose iterators have stages of their own (torch's DataLoader, DGL's and PyG's loaders;
# gnnprof's prefetcher, wherever the package is installed, too).
OWN_STAGES = ("/torch/", "/dgl/", "/torch_geometric/")
ITERATOR_METHODS = ("__next__", "next", "__iter__")
CO_GENERATOR = 0x20


def stdlib_calls(table, iterators=False):
    """A reader of the call the program made into threading, queue, concurrent.futures or
    multiprocessing (without importing them: the program may never), for `table` (names by file
    under the standard library's directory, as CONSUMER_WAITS): program_call(frame) walks out
    from `frame` through those modules' frames and, where the program's own code made that
    call, returns (the outermost of their code objects, or None where there is none: the
    program called at `frame` itself; whether `table` lists its name for its file; the
    third-party frames walked through, below); None where a third-party package's or gnnprof's
    code made it. With `iterators`, a third-party iterator that the program pulls from
    (`__next__`, `next`, `__iter__` or a generator of a package other than OWN_STAGES', as
    prefetch_generator's BackgroundGenerator, through tqdm's) counts as the program's call:
    its frames are the third element."""
    lib = os.path.dirname(threading.__file__)
    dirs = (os.path.join(lib, "concurrent") + os.sep, os.path.join(lib, "multiprocessing") + os.sep)
    files = (threading.__file__, os.path.join(lib, "queue.py"))
    listed = {os.path.join(lib, f): names for f, names in table.items()}
    others = PACKAGES + (PACKAGE,)

    def library_iterator(code):
        name = code.co_filename
        return any(p in name for p in PACKAGES) and not name.startswith(PACKAGE) \
            and not any(o in name for o in OWN_STAGES) and (code.co_name in ITERATOR_METHODS or code.co_flags & CO_GENERATOR)

    def program_call(f):
        called, through = None, ()
        while f is not None:
            code = f.f_code
            name = code.co_filename
            if name.startswith(dirs) or name in files:
                if through:  # the standard library above a library's iterator
                    return None
                called = code
                f = f.f_back
                continue
            if iterators and called is not None and library_iterator(code):
                through += (f,)
                f = f.f_back
                continue
            if any(o in name for o in others):
                return None
            return called, called is not None and called.co_name in listed.get(called.co_filename, ()), through
        return None

    return program_call


def install(native, api, config):
    """Wraps threading.Condition.wait and multiprocessing's Queue.get once per process (a
    reloaded package or a fork finds them wrapped; multiprocessing's once it is imported).
    Returns what was done, for the tests."""
    if not config.flag("GNNPROF_PRODUCER_WAITS", True):
        native.note_collector("producer-waits", False, "GNNPROF_PRODUCER_WAITS=0")
        return "off"
    stage = native.Stage(STAGE, "data")
    program_call = stdlib_calls(CONSUMER_WAITS, iterators=True)
    noted = [False]
    looks = [0]  # library iterators looked into for the user's iterator they pull from (at most 4)
    main_thread, getframe, ident = threading.main_thread, sys._getframe, threading.get_ident

    def counted(depth, direct=False):
        """Whether the wait whose caller is `depth` frames up is the training loop's (its thread
        once auto selection found it, the main thread without auto selection) for work the
        program's own threads or processes do (`direct`: only where the program's own code made
        this very call, not a consumer's call of the standard library that makes it)."""
        if not api._state["bound"] or not native.is_running():  # the module's dict: a reload's too
            return False
        loop = native.loop_thread()  # 1 here, 0 elsewhere, -2 not yet found, -1 no auto selection
        if loop == 0 or loop == -2 or (loop == -1 and ident() != main_thread().ident):
            return False
        # The program's own frame waited on a Condition itself, or made a consumer's call (not
        # Thread.start, which waits for the thread to run).
        call = program_call(getframe(depth))
        if call is None or not (call[0] is None or (call[1] and not direct)):
            return False
        if call[2] and looks[0] < 4:
            looks[0] += 1
            select_wrapped(call[2])
        return True

    def select_wrapped(frames):
        """The user's generator or iterator that a library's iterator pulls from (its attribute:
        prefetch_generator's `generator`), traced where it runs: the library's thread. Runs
        under the Condition's lock: nothing of the host's runs here (no getattr on its objects:
        its __getattr__ could take that lock)."""
        for fr in frames:
            owner = fr.f_locals.get("self")
            try:
                d = object.__getattribute__(owner, "__dict__")
            except Exception:  # no instance dict (slots), or no self
                continue
            for v in list(d.values()):
                code = v.gi_code if isinstance(v, types.GeneratorType) else static_code(type(v), "__next__")
                if code is not None:
                    native.submitted(code)

    def note():
        noted[0] = True
        native.note_collector("producer-waits", True, "the training loop's blocking waits for the program's own threads "
                              "or processes (Queue.get, Future.result, Event.wait: threading.Condition.wait; "
                              "Thread.join; multiprocessing Queue.get, SimpleQueue.get, a Pipe's recv) are the "
                              "data stage \"producer wait\"")

    def waited(original, timeout, *args, direct=False, then=None):
        try:
            on = (timeout is None or timeout > 0) and counted(3, direct)
            if on and not noted[0]:
                note()
            if on and then is not None:
                then()
        except Exception:  # never into the host's wait
            on = False
        if not on:
            return original(*args)
        with stage:
            return original(*args)

    done = []
    cls, original, why = _attach.method_to_wrap("threading", "Condition", "wait", "no threading.Condition.wait")
    if cls is not None:
        def wait(self, timeout=None):
            return waited(original, timeout, self, timeout)
        _attach.replace_method(cls, "wait", wait, original)
        # A child's profile says it too; its library iterators are looked into again.
        os.register_at_fork(after_in_child=lambda: (noted.__setitem__(0, False), looks.__setitem__(0, 0)))
        done.append("Condition.wait")
    elif why == "installed":
        done.append("Condition.wait")

    def select_target(thread):
        """A thread the loop started and joins runs the producer: its target (or its class's
        own run) is traced, in the threads started after."""
        target = thread.__dict__.get("_target")
        code = code_of(target) if target is not None else static_code(type(thread), "run", stop=threading.Thread)
        if code is not None:
            native.submitted(code)

    cls, joined, why = _attach.method_to_wrap("threading", "Thread", "join", "no threading.Thread.join")
    if cls is not None:
        def join(self, timeout=None):
            try:
                mine = self.__dict__.get(LOOP_STARTED, False)
            except Exception:
                mine = False
            if not mine:  # only a thread the loop's thread started
                return joined(self, timeout)
            return waited(joined, timeout, self, timeout, then=lambda: select_target(self))
        _attach.replace_method(cls, "join", join, joined)
        done.append("Thread.join")
    elif why == "installed":
        done.append("Thread.join")

    def wrap_queue_get():
        cls, original, _ = _attach.method_to_wrap("multiprocessing.queues", "Queue", "get", "no Queue.get")
        if cls is not None:
            def get(self, block=True, timeout=None):
                return waited(original, timeout if block else 0, self, block, timeout)
            _attach.replace_method(cls, "get", get, original)
        simple, simple_get, _ = _attach.method_to_wrap("multiprocessing.queues", "SimpleQueue", "get", "no SimpleQueue.get")
        if simple is not None:
            def get_simple(self):  # always blocks
                return waited(simple_get, None, self)
            _attach.replace_method(simple, "get", get_simple, simple_get)

    def recv_of(original):
        def recv(self, *args, **kwargs):  # counted only as the program's own call: not under Queue.get
            try:  # the standard library's own receives pass at once
                passing = stdlib_caller(getframe(1))
            except Exception:
                passing = True
            if passing:
                return original(self, *args, **kwargs)
            return waited(functools.partial(original, **kwargs) if kwargs else original, None, self, *args, direct=True)
        return recv

    def wrap_connection_recv():
        _attach.wrap_each("multiprocessing.connection", "_ConnectionBase", ("recv", "recv_bytes"), recv_of)

    _attach.after_import("multiprocessing.queues", wrap_queue_get)
    _attach.after_import("multiprocessing.connection", wrap_connection_recv)
    done.append("multiprocessing Queue.get, SimpleQueue.get and a Connection's recv (once imported)")
    return ", ".join(done) or "none"
