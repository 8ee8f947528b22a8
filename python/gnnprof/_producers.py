"""The program's own producers, found where they hand a batch over: their lines are traced.

A hand-written pipeline makes batches on a thread of its own, in a thread pool or in a
process, and hands them to the loop through a queue, a Future or an Event. The tracer finds a
producer thread's function at its first torch gather or host-to-device copy; one that samples
with numpy, reads files or builds Python lists makes none. So the hand-over selects it too:
- `threading.Condition.notify` (under Queue.put, Event.set, Future.set_result and
  multiprocessing.Queue.put), wrapped: when the program's own code made the call (PRODUCER_CALLS,
  or notify itself) on a thread other than the loop's once auto selection found the loop, the
  innermost user function running there is traced from then on, as a producer thread's is;
  in a process started by multiprocessing (not a DataLoader worker) a multiprocessing.Queue.put
  or SimpleQueue.put, or a `Pipe`'s Connection.send made by the program's own code (wrapped
  too: they notify nothing) does the same before any loop is found: that process feeds the
  loop's process.
- `ThreadPoolExecutor.submit`, wrapped: once the loop is found, a submitted function of the
  user's files is traced wherever it runs (functools.partial and bound methods unwrapped). One
  submitted before (`Executor.map` submits every item up front) waits in `early` until the
  first notify or submit after the loop is found (a pool thread's set_result notifies).
- `threading.Thread.start`, wrapped: a thread the loop's thread starts once the loop is found
  is marked (LOOP_STARTED); its join on the loop's thread (the next batch loaded while this
  one trains, then joined) is a producer wait, and selects its target (or its class's own
  `run`) of the user's files, traced in the threads started after, as a submitted function is.
Auto selection only (the native side checks); a thread stops looking once one is found.
"""
import os
import sys
import threading

from . import _attach, _producer_waits

# The standard library's calls a producer makes to hand a batch over, by the file under the
# standard library's directory and the function's name.
PRODUCER_CALLS = {
    "queue.py": ("put", "put_nowait"),
    "threading.py": ("set", "notify", "notify_all"),  # Event.set, Condition.notify
    os.path.join("concurrent", "futures", "_base.py"): ("set_result", "set_exception"),
    os.path.join("multiprocessing", "queues.py"): ("put", "put_nowait"),
}
MP_QUEUES = os.path.join("multiprocessing", "queues.py")
EARLY = 16  # distinct functions submitted before the loop is found, kept to select then



def install(native, api):
    """Wraps Condition.notify now and ThreadPoolExecutor.submit once concurrent.futures is
    imported (once per process). Returns what was done, for the tests."""
    if not hasattr(native, "producer_call"):
        return "none"
    program_call = _producer_waits.stdlib_calls(PRODUCER_CALLS)
    mp_queues = os.path.join(os.path.dirname(threading.__file__), MP_QUEUES)
    getframe = sys._getframe

    def in_child():
        """A process that multiprocessing started (not the loop's own)."""
        mp = sys.modules.get("multiprocessing.process")
        return mp is not None and mp.parent_process() is not None

    def handed_over(depth, direct=False):
        """The standard library's code the program called above `depth` frames when the
        program's own code made a producer's call ("notify": it made the wrapped call itself),
        else None (`direct`: only where it made the wrapped call itself)."""
        call = program_call(getframe(depth))
        if call is None or (call[0] is not None and (direct or not call[1])):
            return None
        return call[0] or "notify"

    # Code objects of the user's files submitted to a ThreadPoolExecutor before the loop was
    # found (at most EARLY), in early[0]: swapped out whole when taken.
    early = [{}]

    def submitted_early(loop):
        """Selects what was submitted before the loop was found, once it is."""
        if loop in (0, 1, -1):
            codes, early[0] = early[0], {}
            if loop != -1:
                for code in codes:
                    native.submitted(code)

    def look(ipc=False, direct=False):
        """At a notify (`ipc`: at a multiprocessing.SimpleQueue.put or Connection.send, which
        notify nothing; `direct`: only the program's own call of it counts)."""
        if not api._state["bound"] or not native.is_running():
            return
        loop = native.loop_thread()  # 1 here, 0 elsewhere, -2 not yet found, -1 no auto selection
        if early[0]:
            submitted_early(loop)
        if loop == 1 or loop == -1:
            return
        child = loop == -2
        if (child and not in_child()) or not native.producer_may(child):
            return
        called = handed_over(3, direct)
        if called is None:
            return
        if not child:
            native.producer_call(False)
        elif (ipc or getattr(called, "co_filename", None) == mp_queues) and native.producer_call(True):
            feeds = sys.modules["multiprocessing.process"].parent_process().pid
            if native.set_feeds(feeds) == 0:
                api._state["feeds"] = feeds

    done = []
    cls, original, why = _attach.method_to_wrap("threading", "Condition", "notify", "no threading.Condition.notify")
    if cls is not None:
        def notify(self, n=1):
            try:
                look()
            except Exception:  # never into the host's hand-over
                pass
            return original(self, n)
        _attach.replace_method(cls, "notify", notify, original)
        done.append("Condition.notify")
    elif why == "installed":
        done.append("Condition.notify")

    cls, started, why = _attach.method_to_wrap("threading", "Thread", "start", "no threading.Thread.start")
    if cls is not None:
        def start(self):
            try:
                # the loop's thread: where auto selection found it, else the main thread (as the waits')
                loop = native.loop_thread() if api._state["bound"] else 0
                if loop == 1 or (loop == -1 and threading.get_ident() == threading.main_thread().ident):
                    self.__dict__[_producer_waits.LOOP_STARTED] = True
            except Exception:  # never into the host's start
                pass
            return started(self)
        _attach.replace_method(cls, "start", start, started)
        done.append("Thread.start")
    elif why == "installed":
        done.append("Thread.start")

    def wrap_submit():
        cls, original, _ = _attach.method_to_wrap("concurrent.futures.thread", "ThreadPoolExecutor", "submit",
                                                   "no ThreadPoolExecutor.submit")
        if cls is None:
            return

        def submit(self, fn, /, *args, **kwargs):
            try:
                if api._state["bound"]:
                    loop = native.loop_thread()
                    code = _producer_waits.code_of(fn)
                    if loop == -2 and code is not None and len(early[0]) < EARLY and _producer_waits.users_code(code):
                        early[0][code] = True
                    elif early[0]:
                        submitted_early(loop)
                    if loop in (0, 1) and code is not None:
                        native.submitted(code)
            except Exception:  # never into the host's submit
                pass
            return original(self, fn, *args, **kwargs)
        _attach.replace_method(cls, "submit", submit, original)

    def wrap_simple_put():
        cls, original, _ = _attach.method_to_wrap("multiprocessing.queues", "SimpleQueue", "put",
                                                   "no SimpleQueue.put")
        if cls is None:
            return

        def put(self, obj):
            try:
                look(True)
            except Exception:  # never into the host's hand-over
                pass
            return original(self, obj)
        _attach.replace_method(cls, "put", put, original)

    def wrap_connection_send():
        _attach.wrap_each("multiprocessing.connection", "_ConnectionBase", ("send", "send_bytes"), send_of)

    def send_of(original):
        def send(self, *args, **kwargs):
            try:  # the standard library's own sends pass at once
                if not _producer_waits.stdlib_caller(getframe(1)):
                    look(True, direct=True)
            except Exception:  # never into the host's hand-over
                pass
            return original(self, *args, **kwargs)
        return send

    _attach.after_import("multiprocessing.connection", wrap_connection_send)
    done.append("a multiprocessing Connection's send (once imported)")
    _attach.after_import("multiprocessing.queues", wrap_simple_put)
    done.append("multiprocessing SimpleQueue.put (once imported)")
    _attach.after_import("concurrent.futures.thread", wrap_submit)
    done.append("ThreadPoolExecutor.submit (once imported)")
    return ", ".join(done)
