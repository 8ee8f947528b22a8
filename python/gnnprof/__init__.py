"""gnnprof for Python: per-line and per-stage profiles of GNN training loops.

Zero code:      gnnprof run -- python3 train.py      (or: python3 -m gnnprof train.py)
In the script:

    import gnnprof

    @gnnprof.profile                    # this function's line table, like line_profiler's
    def train(loader, model, opt): ...

    with gnnprof.stage("sample"):       # a stage (also a decorator: @gnnprof.stage("sample"))
        blocks = sampler.sample(seeds)
    gnnprof.step()                      # iteration boundary (torch's optimizer steps mark them
                                        # on their own)

Under `gnnprof run` the package joins the injected library's session: one profile per
process. Imported on its own it loads that library, which starts a session writing
gnnprof-<pid>.json at exit (GNNPROF_OUTPUT names it; GNNPROF_ENABLED=0 turns it off).
Line tracing follows GNNPROF_LINES (see gnnprof._lines): by default the training loop.
"""
import _thread
import atexit
import functools
import itertools
import os
import sys
import types

from . import _paths

__all__ = [
    "profile", "stage", "step", "step_end", "start", "stop", "flush", "is_running", "counter",
    "record_transfer", "record_materialization", "set_thread_name", "status", "prefetch", "resolve_depth",
]
__version__ = _paths.VERSION

try:
    from . import _native
    _native_error = None
except ImportError as e:  # another Python ABI than the one gnnprof was built for
    _native = None
    _native_error = f"{type(e).__name__}: {e}"

_state = {"bound": False, "how": "", "lines": "off", "specs": [], "warned": False, "none": False, "auto": False,
          "library": (), "loader_forks": 0, "loader_limit": 0, "lines_warned": False, "worker": False,
          "started_by": None, "starting": None, "process_forks": 0, "forked_to_train": False,
          "armed": 0}


def _note_without_native(reason):
    """Say why in the collector list even when the native module cannot load: through ctypes,
    when the process has gnnprof's C ABI (gnnprof run)."""
    try:
        import ctypes
        lib = ctypes.CDLL(None)
        lib.gnnprof_note_collector(b"python-lines", 0, reason.encode())
    except (OSError, AttributeError, ImportError):
        pass


def _bind():
    if _native is None:
        reason = (f"gnnprof's Python module does not load in {sys.executable} "
                  f"(Python {sys.version.split()[0]}): {_native_error}; configure gnnprof with "
                  f"-DGNNPROF_EXTRA_PYTHONS={sys.executable} to build it for this Python too")
        _note_without_native(reason)
        return False, reason
    preload = _paths.PRELOAD if os.path.exists(_paths.PRELOAD) else ""
    ok, how = _native.bind(preload)
    return bool(ok), how


def _is_launcher():
    """`python3 -m gnnprof ...`: this process only starts `gnnprof run`; it records nothing."""
    argv = getattr(sys, "orig_argv", [])
    return any(a == "-m" and b == "gnnprof" for a, b in zip(argv, argv[1:]))


def _with_output(path, fn):
    """fn() with GNNPROF_OUTPUT=path (a session reads it when it starts); the variable restored."""
    old = os.environ.get("GNNPROF_OUTPUT")
    os.environ["GNNPROF_OUTPUT"] = path
    try:
        return fn()
    finally:
        if old is None:
            del os.environ["GNNPROF_OUTPUT"]
        else:
            os.environ["GNNPROF_OUTPUT"] = old


def _imported_by_ipython():
    """`%load_ext gnnprof` (IPython's extension loader is on the stack): the session this import
    starts is stopped when the magics are registered; its profile goes to a temporary folder, not
    into the notebook's."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename.endswith(os.path.join("IPython", "core", "extensions.py")):
            return True
        f = f.f_back
    return False


if _is_launcher():
    _state["how"] = "launcher"
elif _imported_by_ipython() and "GNNPROF_OUTPUT" not in os.environ:
    import tempfile
    _state["ipython_dir"] = tempfile.mkdtemp(prefix="gnnprof-")
    _state["bound"], _state["how"] = _with_output(os.path.join(_state["ipython_dir"], "before-load_ext.json"), _bind)
else:
    _state["bound"], _state["how"] = _bind()


# ---- API ----

if _native is not None:
    class stage(_native.Stage):
        """A stage: `with gnnprof.stage("sample"):` or `@gnnprof.stage("sample")`. The category
        follows the name (sample, gather, h2d... are data; forward, backward, optimizer are
        compute) unless given. Bare, `@gnnprof.stage` names it after the function, category
        "function" (C++: GNNPROF_FUNCTION())."""

        def __new__(cls, name, category=None):
            if callable(name) and not isinstance(name, str):
                label = getattr(_function_of(name), "__qualname__", None) or type(name).__name__
                return cls(label, "function")(name)
            return super().__new__(cls)

        def __call__(self, fn):
            @functools.wraps(fn)
            def staged(*args, **kwargs):
                with self:
                    return fn(*args, **kwargs)
            return staged
else:
    class stage:  # no native module: a stage that records nothing
        def __new__(cls, name, category=None):
            if callable(name) and not isinstance(name, str):
                return name
            return super().__new__(cls)

        def __init__(self, name, category=None):
            self.name = name

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __call__(self, fn):
            return fn


def _function_of(obj):
    """The function behind a method, property or wrapper: what holds the code."""
    for attr in ("__func__", "fget", "__wrapped__"):
        while hasattr(obj, attr) and not hasattr(obj, "__code__"):
            obj = getattr(obj, attr)
    return obj


def profile(fn):
    """Traces `fn`'s lines (a drop-in for line_profiler's @profile); returns `fn` itself."""
    function = _function_of(fn)
    code = getattr(function, "__code__", None)
    if code is None:
        raise TypeError(f"gnnprof.profile: {fn!r} has no code to trace")
    if _native is not None and not _state["none"]:  # GNNPROF_LINES=none: no line tracing at all
        _native.select(code, _native.ROLE_EXPLICIT, function)
        if _state["lines"] == "off":
            _state["lines"] = "@profile"
            _note_lines()
    return fn


def step():
    """Iteration boundary: ends the open iteration and begins the next."""
    if _native is not None:
        _native.step()


def step_end():
    """Ends the open iteration without beginning another (e.g. before validation)."""
    if _native is not None:
        _native.step_end()


def start():
    """Starts the session (a no-op when one runs); line tracing resumes for what was selected.
    0, 1 when disabled, -1 on error."""
    return _native.start() if _state["bound"] else -1


def stop():
    """Stops the session and writes the profile; line tracing stops too (no per-call cost
    after it). 0, or -1 when not written."""
    return _native.stop() if _state["bound"] else -1


def flush():
    """Writes the profile so far; the session goes on."""
    return _native.flush() if _state["bound"] else -1


def is_running():
    return bool(_state["bound"] and _native.is_running())


_counters = {}


def counter(name, value):
    """Samples a named value (a queue depth, ...)."""
    if not _state["bound"]:
        return
    site = _counters.get(name)
    if site is None:
        site = _counters[name] = _native.counter_site(name)
    _native.counter(site, float(value))


_DIRECTIONS = {"h2d": 0, "d2h": 1, "d2d": 2, "h2h": 3}
_MEMORY = {"pageable": 0, "pinned": 1, "none": 2}
_MODES = {"sync": 0, "async": 1}


def record_transfer(nbytes, direction="h2d", memory="pinned", mode="async", duration_ns=0):
    """Records a copy, attributed to the current stage and line."""
    if _state["bound"]:
        _native.transfer(int(nbytes), _DIRECTIONS[direction], _MEMORY[memory], _MODES[mode], int(duration_ns))


_materialize_sites = {}


def record_materialization(rows, nbytes, name=None):
    """Records a gather of `rows` rows (`nbytes` bytes), attributed to the current stage and line.
    With a name (C++: GNNPROF_MATERIALIZE("name", rows, bytes)), the report's materializations
    list it under that name, at the calling line."""
    if not _state["bound"]:
        return
    if name is None:
        _native.materialize(int(rows), int(nbytes))
        return
    caller = sys._getframe(1)
    key = (str(name), caller.f_code, caller.f_lineno)
    site = _materialize_sites.get(key)
    if site is None:
        code = caller.f_code
        site = _materialize_sites[key] = _native.materialize_site(
            key[0], code.co_filename, getattr(code, "co_qualname", code.co_name), caller.f_lineno)
    _native.materialize_at(site, int(rows), int(nbytes))


def set_thread_name(name):
    if _state["bound"]:
        _native.set_thread_name(name)


def _feeds_loop():
    """The calling thread runs a data loader for the loop (the prefetcher's): the user code the
    loader calls there joins the traced pipeline, as in a DataLoader worker."""
    if _state["bound"] and not _state["none"]:
        _native.feeds_loop()


def status():
    """How the package is connected, for diagnostics and tests."""
    out = dict(bound=_state["bound"], how=_state["how"], lines=_state["lines"],
               specs=[s.text for s in _state["specs"]])
    if _native is not None:
        out["tracer"] = _native.stats()
    return out


def load_ipython_extension(ipython):
    """`%load_ext gnnprof` in IPython or Jupyter: the %gnnprof / %%gnnprof magics (gnnprof._ipython)."""
    from . import _ipython
    _ipython.load(ipython)


# ---- prefetch ----

def prefetch(loader, depth=None, device=None, prepare=None):
    """Prepares `loader`'s batches up to `depth` ahead on a thread (depth=None: GNNPROF_PREFETCH,
    else 2; 0: inline), moving their tensors to `device` through a staging ring on a side
    stream, after `prepare(batch)` when given. See gnnprof._prefetch."""
    from . import _prefetch
    return _prefetch.prefetch(loader, depth=depth, device=device, prepare=prepare)


def resolve_depth(default=2):
    """The prefetch depth GNNPROF_PREFETCH asks for, else `default` (the C++ resolve_depth: a bad
    value prints one warning and yields the default)."""
    from . import _prefetch
    return _prefetch.resolve_depth(None, default)


def _select_pipeline(loader, prepare=None):
    """Auto line tracing: the user's generator or iterator behind a prefetched loader, and its
    prepare function, are the loop's data pipeline (the loop pulls from the prefetcher, which
    pulls from them): traced whatever thread runs them (depth 0: the loop's), so that the
    baseline and the prefetched run trace the same code."""
    if _native is None or not _state["auto"]:
        return
    code = None
    if isinstance(loader, types.GeneratorType):
        code = loader.gi_code
    else:
        nxt = getattr(type(loader), "__next__", None) or getattr(type(loader), "__iter__", None)
        code = getattr(nxt, "__code__", None)
    for c in (code, getattr(_function_of(prepare), "__code__", None) if prepare is not None else None):
        if c is not None and not c.co_filename.startswith(_state["library"]):
            _native.select(c, _native.ROLE_PIPELINE)


# ---- line tracing ----

def _note_lines(final=False):
    if not _state["bound"]:
        return
    mode = _state["lines"]
    if mode == "off":
        _native.note_collector("python-lines", False, "off (GNNPROF_LINES=none)")
        return
    if not _native.LINES:  # built without the tracer (python/src/tracer_none.c)
        reason = ("not traced: this build of the package has no line tracer (GNNPROF_PYTHON_LINES=OFF); "
                  "stages, steps, copies and prefetch are recorded")
        if not _state["lines_warned"]:
            _state["lines_warned"] = True
            print(f"gnnprof: python-lines: {reason}", file=sys.stderr)
        _native.note_collector("python-lines", False, reason)
        return
    st = _native.stats()
    if _state.get("pool_worker") and not final:
        # Selected as the pool calls them, natively; a worker that its pool's terminate() ends
        # keeps this note (the signal's flush runs no Python), a count there would be stale.
        _native.note_collector("python-lines", True, f"{mode}; a process pool's worker: the program's functions its "
                               "pool calls are traced as they run (counted here when the worker exits)")
        return
    reason = f"{mode}; {st['selected']} code objects traced"
    if st.get("producers"):
        feeds = _state.get("feeds")
        reason += (f" ({st['producers']} producer function: this process hands batches to pid {feeds} through a "
                   "multiprocessing queue or pipe)" if feeds and st["producers"] == 1 else
                   f" ({st['producers']} producer functions: this process hands batches to pid {feeds} through a "
                   "multiprocessing queue or pipe)" if feeds else
                   f" ({st['producers']} on a producer thread or submitted to a thread pool)")
    if st.get("callbacks"):
        reason += f" ({st['callbacks']} called back by the framework running the loop)"
    if final:
        reason += f", {st['line_events']} line events"
        unmatched = [s.text if s.file_known() else f"{s.text} (no file of that name was loaded: {s.file})"
                 for s in _state["specs"] if not s.matched]
        if unmatched:
            reason += "; matched nothing that ran: " + ", ".join(unmatched)
        if st["foreign_tracer"]:
            reason += "; another tracer (a debugger or coverage) held some threads"
    _native.note_collector("python-lines", True, reason)


# ---- fork children ----

class _Token:  # multiprocessing's after-fork registry holds its objects weakly
    pass


_worker_token = _Token()


def _frames_above(f, limit=64):
    """The frames from f outwards, at most limit of them."""
    while f is not None and limit > 0:
        yield f
        f = f.f_back
        limit -= 1


def _forked_by_loader():
    """Whether this fork is a data loader's worker: a loader library's frame is on the stack."""
    from . import _lines
    return any(any(x in f.f_code.co_filename for x in _lines.LOADERS) for f in _frames_above(sys._getframe(1)))


def _loader_iterator_frames():
    """The frames of torch's data loader iterator __init__ above the caller's (the one that
    starts workers: _MultiProcessingDataLoaderIter's, then its base's)."""
    for f in _frames_above(sys._getframe(2)):
        if "/torch/utils/data/" in f.f_code.co_filename and f.f_code.co_name == "__init__":
            yield f


def _loader_workers():
    """The worker count of the data loader iterator whose frame forks (torch's
    _MultiProcessingDataLoaderIter: its num_workers), or None."""
    for f in _loader_iterator_frames():
        n = getattr(f.f_locals.get("self"), "_num_workers", None)
        if isinstance(n, int):
            return n
    return None


def _loader_label():
    """The DataLoader whose iterator starts workers here, as the workers' run.loader: its
    dataset (class and object: the same for each pass, also for a loader rebuilt each epoch over
    it; another for the loop's other loaders, a validation loader's), batch size and worker
    count; None when not found."""
    for f in _loader_iterator_frames():
        loader = f.f_locals.get("loader")
        if loader is not None and hasattr(loader, "num_workers"):
            dataset = getattr(loader, "dataset", None)
            return (f"{type(dataset).__name__} at {id(dataset):#x}, batch_size {getattr(loader, 'batch_size', None)}, "
                    f"{loader.num_workers} workers")
    return None


def _after_fork_in_parent():
    """A data loader's workers: their count is a counter of the parent's profile ("DataLoader
    workers"), which the report's loader-bound rule quotes; the loader forks are counted (the
    child sees the count before its own fork: GNNPROF_LOADER_WORKERS caps the profiled ones)."""
    try:
        if _forked_by_loader():
            _state["loader_forks"] += 1
        n = _loader_workers()
        if n is not None and _native.is_running():
            counter("DataLoader workers", n)
            torch = sys.modules.get("torch")  # the loop's compute threads beside them (loader-contention)
            if torch is not None:
                counter("torch threads", torch.get_num_threads())
    except Exception:  # never into the host's fork
        pass


def _batch_storages(batch, limit=4096):
    """The CPU tensor storages a batch holds (in containers and objects' attributes, 8 levels
    down): a worker's pickler shares each with the loop on its own, so the loop's cost of
    receiving a batch grows with their number (objects that pickle themselves may hold others)."""
    torch = sys.modules["torch"]
    seen, stack, visited = set(), [(batch, 0)], 0
    while stack and visited < limit:
        x, depth = stack.pop()
        visited += 1
        if isinstance(x, torch.Tensor):
            if x.device.type == "cpu":
                try:
                    store = x.untyped_storage() if hasattr(x, "untyped_storage") else x.storage()
                    seen.add(store.data_ptr())
                except Exception:  # a sparse tensor: shared by its parts
                    seen.add(id(x))
        elif depth < 8:
            if isinstance(x, (list, tuple)):
                stack.extend((y, depth + 1) for y in x)
            elif isinstance(x, dict):
                stack.extend((y, depth + 1) for y in x.values())
            elif hasattr(x, "__dict__") and not isinstance(x, type) and not isinstance(x, types.ModuleType):
                stack.extend((y, depth + 1) for y in vars(x).values())
    return len(seen)


def _mark_worker_fetches():
    """In a DataLoader worker: each batch it fetches is an iteration. A ProfilerStep#N scope
    around torch's fetcher marks it for the torch observer, whose iteration sampling then works
    here as in the loop (without marks every op of the worker is observed); step_end() after it
    leaves the wait for the next batch's indices outside the iteration. The first batches'
    tensor storages are counted ("tensors per batch (<sharing strategy>)"): the loop's report
    weighs its wait to receive batches by them."""
    fetch = sys.modules.get("torch.utils.data._utils.fetch")
    profiler = sys.modules.get("torch.autograd.profiler")
    if fetch is None or profiler is None:
        return False
    record_function, count = profiler.record_function, itertools.count()
    try:
        strategy = sys.modules["torch"].multiprocessing.get_sharing_strategy()
    except Exception:
        strategy = "unknown"
    storages_name = f"tensors per batch ({strategy})"

    def marked(original):
        @functools.wraps(original)
        def fetch_batch(self, *args, **kwargs):
            # The fetch's own exceptions (an iterable dataset's StopIteration) pass through;
            # gnnprof's scope and mark never raise into the worker.
            try:
                scope = record_function(f"ProfilerStep#{next(count)}")
                scope.__enter__()
            except Exception:
                scope = None
            batch, fetched = None, False
            try:
                batch = original(self, *args, **kwargs)
                fetched = True
                return batch
            finally:
                try:
                    if scope is not None:
                        scope.__exit__(None, None, None)
                    # A fetch that raised (an iterable dataset's end) made no batch: no iteration.
                    _native.step_end(not fetched)
                    if fetched and batch is not None and counted.get("batches", 0) < 64:
                        counted["batches"] = counted.get("batches", 0) + 1
                        counter(storages_name, _batch_storages(batch))
                except Exception:
                    pass
        return fetch_batch

    counted = {}

    marked_any = False
    for name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(fetch, name, None)
        original = getattr(cls, "fetch", None) if cls is not None else None
        if callable(original) and "fetch" in cls.__dict__:
            cls.fetch = marked(original)
            marked_any = True
    return marked_any


def _stop_worker():
    """A child's profile, written at its exit. A termination signal meanwhile (a pool's
    terminate() while its worker ends on its own) waits until the file is written: the preload's
    flush for it would take, in a copy of this process, a lock these calls may hold."""
    import signal
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, (signal.SIGTERM, signal.SIGINT, signal.SIGHUP))
    except (AttributeError, OSError, ValueError):
        old = None
    try:
        _native.close_thread()
        _native.close_torch_thread()
        _note_lines(final=True)
    finally:
        try:
            stop()
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _arm_worker(_):
    """multiprocessing's child bootstrap clears the finalizers inherited from the parent, then
    runs the after-fork callbacks; the worker leaves by os._exit after its finalizers (atexit
    does not run): the worker's profile is written there. Once per process: a worker of a
    process forked to train also runs the callback that process registered."""
    if _state["armed"] == os.getpid():
        return
    _state["armed"] = os.getpid()
    sys.modules["multiprocessing.util"].Finalize(None, _stop_worker, exitpriority=100)


def _note_worker(how, parent, index, limit):
    """The worker's batches as iterations; its collector note."""
    _state["worker"] = True
    marked = _mark_worker_fetches()
    _native.note_collector("loader-worker", True, f"a data loader's worker process, {how} pid {parent}: its own "
                           f"profile from {'the fork' if how.startswith('forked') else 'its worker loop'} on"
                           f"{'; an iteration per batch fetched' if marked else ''} (worker {index + 1} of the run; "
                           f"GNNPROF_LOADER_WORKERS={limit} profiles the first {limit}, 0: none)")
    # A fork inherits the loop's notes; the optimizer's is the loop's, not the worker's.
    _native.note_collector("torch-optimizer-ops", False, "a data loader's worker runs no optimizer")
    if _state["forked_to_train"]:  # the loop's own note, when a process forked to train runs it
        _native.note_collector("fork-child", False, f"a data loader's worker of pid {parent}, which was forked to train")
    _note_lines()


def _after_fork_in_child():
    """A forked child records nothing, and runs without the frame hook; a data loader's worker
    gets a session and a profile of its own instead, with the user code its loader calls
    traced: the run's first GNNPROF_LOADER_WORKERS (16) of them, so that a run of many epochs,
    each forking its workers anew, does not leave a profile per worker per epoch."""
    _state["pool_worker"] = False  # a fork of a pool's worker is none, unless it becomes one below
    try:
        # The process multiprocessing is starting, when this thread's start forked this child;
        # taken at once, so that no later fork here (a bare os.fork()) takes it for its own.
        starting, _state["starting"] = _state["starting"], None
        proc = starting[1] if starting is not None and starting[0] == _thread.get_ident() else None
        util = sys.modules.get("multiprocessing.util")
        limit = _state["loader_limit"]
        if (util is not None and _state["loader_forks"] < limit and _forked_by_loader()
                and _native.start_worker(0) == 0):
            util.register_after_fork(_worker_token, _arm_worker)  # first: the session must stop
            _note_worker("forked from", os.getppid(), _state["loader_forks"], limit)
            label = _loader_label()
            if label is not None:
                _native.set_loader(label)
            return
        if (util is not None and proc is not None and _is_pool_target(getattr(proc, "_target", None))
                and _state["process_forks"] < _PROCESS_LIMIT and _native.start_pool_child() == 0):
            util.register_after_fork(_child_token, _arm_worker)  # its finalizer writes the profile
            _state["forked_to_train"] = False
            _become_pool_worker(proc, os.getppid(), f"forked from pid {os.getppid()}",
                                f"process {_state['process_forks'] + 1} of the run; the first {_PROCESS_LIMIT} are")
            return
        start_fork_child = getattr(_native, "start_fork_child", None)  # a native module of this package's version
        if (util is not None and proc is not None and start_fork_child is not None
                and _state["process_forks"] < _PROCESS_LIMIT and start_fork_child() == 0):
            util.register_after_fork(_child_token, _arm_worker)  # its finalizer writes the profile
            _state["forked_to_train"] = True
            _native.note_collector(
                "fork-child", True,
                f"a multiprocessing.Process forked from pid {os.getppid()} to run {_target_name(proc)}: a program of "
                f"its own, profiled from the fork on (process {_state['process_forks'] + 1} of the run; the first "
                f"{_PROCESS_LIMIT} are)")
            if not _state["none"]:
                _native.set_hook(True)
            return
    except Exception:  # never into the host's fork
        pass
    try:
        _native.set_hook(False)
    except Exception:
        pass


# ---- processes forked to train (multiprocessing.Process, fork start method) ----
# Hogwild-style training, or a hyperparameter run per process: the child runs the program's own
# code, and gets a profile of its own (<stem>.<pid>.json, beside the parent's), as a spawned one
# does. A process pool's workers are producers of the program's own (their profiles name the
# loop's process); other library processes (a Manager's server) record nothing, as before.

_PROCESS_LIMIT = 16
_child_token = _Token()
_LIBRARY_PROCESSES = ("multiprocessing", "concurrent.futures", "torch.utils.data", "torch.multiprocessing")


def _user_target(proc):
    """The function a Process runs for the program: its target, or the one that
    torch.multiprocessing's _wrap calls (start_processes(..., start_method="fork"))."""
    target = getattr(proc, "_target", None)
    if (getattr(target, "__module__", None) == "torch.multiprocessing.spawn"
            and getattr(target, "__name__", None) == "_wrap"):
        args = getattr(proc, "_args", ())
        return args[0] if args and callable(args[0]) else None
    return target


def _runs_user_code(proc):
    """Whether a Process runs the program's own code: a target of its own, or run() overridden
    outside the standard library and torch."""
    target = _user_target(proc)
    if target is None:
        cls = type(proc)
        module = getattr(cls, "__module__", "") or ""
        return "run" in cls.__dict__ and not module.startswith(_LIBRARY_PROCESSES)
    module = getattr(target, "__module__", "") or ""
    return not module.startswith(_LIBRARY_PROCESSES)


def _is_pool_target(target):
    """A process pool's worker loop: multiprocessing.Pool's, or ProcessPoolExecutor's."""
    return (getattr(target, "__module__", None), getattr(target, "__name__", None)) in (
        ("multiprocessing.pool", "worker"), ("concurrent.futures.process", "_process_worker"))


def _become_pool_worker(proc, parent, how, which):
    """A process pool's worker whose session runs: it feeds `parent` (run.feeds_pid), and the
    user code its pool calls is traced, as a DataLoader worker's loader's."""
    from . import _lines
    _state["feeds"] = parent
    _native.set_feeds(parent)
    _native.set_loaders(_lines.LOADERS + _lines.POOLS)
    target = proc._target
    _native.note_collector(
        "fork-child", True,
        f"a process pool's worker ({target.__module__}.{target.__name__}) {how}: the program's functions it runs are "
        f"traced, and the loop's report reads this profile as a producer's (run.feeds_pid; {which})")
    if not _state["none"]:
        _native.set_hook(True)
    _state["pool_worker"] = True
    _note_lines()


def _target_name(proc):
    target = _user_target(proc)
    if target is None:
        return f"{type(proc).__qualname__}.run"
    return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)


# ---- DataLoader workers started by spawn or forkserver ----
# No fork of the loop's process: the loop's side marks the worker's process object (pickled to
# the child) with its index in the run; the child, a process of its own under `gnnprof run`,
# drops what its session recorded before the worker loop and starts the worker's, naming the loop.

def _is_loader_target(target):
    return (getattr(target, "__module__", None) == "torch.utils.data._utils.worker"
            and getattr(target, "__name__", None) == "_worker_loop")


def _wrap_once(owner, name, make, inherited=False):
    """owner.name replaced by make(original), once (a reloaded package does not wrap twice);
    the original, or None when there was nothing to wrap. `inherited`: also where owner's name
    resolves to a base's (the wrapper is set on owner)."""
    original = getattr(owner, name, None) if inherited else owner.__dict__.get(name)
    if original is None or getattr(original, "_gnnprof", False):
        return None
    wrapper = functools.wraps(original)(make(original))
    wrapper._gnnprof = True
    setattr(owner, name, wrapper)
    return original


def _wrap_process_start():
    """multiprocessing's BaseProcess.start, wrapped: a DataLoader worker's process object gets
    its index in the run; one started without a fork (spawn, forkserver) is counted here (a
    fork is counted by the fork handler). No lock across the start: a fork child would inherit
    it held; two loaders starting workers on two threads at once may share an index (the cap is
    then off by one)."""
    def make(original):
        def start(self):
            loader = False
            try:
                loader = _is_loader_target(getattr(self, "_target", None))
                if loader:
                    self._gnnprof_worker = _state["loader_forks"]
                    self._gnnprof_loader = _loader_label()
            except Exception:
                pass
            user = False
            if not loader:
                try:
                    user = _runs_user_code(self) or _is_pool_target(getattr(self, "_target", None))
                except Exception:
                    pass
            _state["starting"] = (_thread.get_ident(), self) if user else None  # read by the fork child
            try:
                result = original(self)  # its own errors pass through unchanged
            finally:
                _state["starting"] = None
            if user:
                try:
                    if getattr(getattr(self, "_popen", None), "method", "fork") == "fork":
                        _state["process_forks"] += 1
                except Exception:
                    pass
            if loader:
                try:
                    if getattr(getattr(self, "_popen", None), "method", "fork") != "fork":
                        _state["loader_forks"] += 1
                        n = _loader_workers()
                        if n is not None and _native.is_running():
                            counter("DataLoader workers", n)
                except Exception:
                    pass
            return result
        return start

    _wrap_once(sys.modules["multiprocessing.process"].BaseProcess, "start", make)


def _started_by_multiprocessing():
    """"spawn" in a spawned child, "forkserver" in the forkserver (whose children are forks of
    it), else None. From the interpreter's own argv: a spawned child's sys.argv becomes its
    parent's before the script's `import gnnprof` runs there."""
    if getattr(sys, "orig_argv", sys.argv)[-1:] == ["--multiprocessing-fork"]:
        return "spawn"
    if any("from multiprocessing.forkserver import main" in a for a in getattr(sys, "orig_argv", ())):
        return "forkserver"
    return None


def _arm_started_worker(proc):
    """Before a spawned or forkserver child runs its target: when that is torch's worker loop
    and the loop's side marked it, the worker's session starts (or, past the run's first
    GNNPROF_LOADER_WORKERS, the process's session is dropped)."""
    try:
        if (not _state["worker"] and _is_pool_target(getattr(proc, "_target", None))
                and _native.start_pool_child(True) == 0):  # its own session goes on: written at its exit
            _become_pool_worker(proc, proc._parent_pid, f"started by {_state['started_by']} for pid {proc._parent_pid}",
                                "its whole process")
            return
        index = proc.__dict__.get("_gnnprof_worker")
        if _state["worker"] or not isinstance(index, int) or not _is_loader_target(getattr(proc, "_target", None)):
            return
        limit, parent = _state["loader_limit"], proc._parent_pid
        if index >= limit:
            _native.discard()
            return
        if _native.start_worker(parent) != 0:
            return
        if not _state["none"]:
            _native.set_hook(True)  # a forkserver child's fork handler took it out; explicit specs too
        sys.modules["multiprocessing.util"].Finalize(None, _stop_worker, exitpriority=100)
        _note_worker(f"started by {_state['started_by']} for", parent, index, limit)
        label = proc.__dict__.get("_gnnprof_loader")
        if isinstance(label, str):
            _native.set_loader(label)
    except Exception:  # never into the worker
        pass


def _wrap_process_run():
    """In a spawned child or the forkserver (its children inherit it): multiprocessing's
    BaseProcess.run, wrapped to arm a DataLoader worker first. (A spawned child runs no
    after-fork callbacks.)"""
    def make(original):
        def run(self):
            _arm_started_worker(self)
            return original(self)
        return run

    _wrap_once(sys.modules["multiprocessing.process"].BaseProcess, "run", make)


# ---- distributed ranks ----

def _wrap_init_process_group():
    """torch.distributed.init_process_group, wrapped: a rank started without RANK in its
    environment (torch.multiprocessing.spawn, as PyG's and DGL's multi-GPU examples start theirs)
    tells its session its rank and world size, so that its profile is a rank's (its file
    OUT.rank<N>.<pid>.json, for gnnprof merge)."""
    c10d = sys.modules["torch.distributed.distributed_c10d"]

    def make(original):
        def init_process_group(*args, **kwargs):
            result = original(*args, **kwargs)  # its own errors pass through unchanged
            try:
                local = os.environ.get("LOCAL_RANK", "")
                _native.set_rank(c10d.get_rank(), int(local) if local.isdigit() else -1, c10d.get_world_size())
            except Exception:
                pass
            return result
        return init_process_group

    original = _wrap_once(c10d, "init_process_group", make)
    dist = sys.modules.get("torch.distributed")  # its name for it, when imported already
    if original is not None and dist is not None and getattr(dist, "init_process_group", None) is original:
        dist.init_process_group = c10d.init_process_group


def _wrap_settrace():
    """sys.settrace, wrapped on CPython 3.10/3.11, where the line tracer sits in the slot that
    sys.settrace(None) empties (a debugger's `continue`, a library ending its own tracing):
    after it, a thread with a traced frame still running goes on being traced (was: the rest
    of the loop went to the line that called it)."""
    def make(original):
        def settrace(function):
            original(function)
            if function is None:
                try:
                    _native.retake_thread()
                except Exception:
                    pass
        return settrace
    _wrap_once(sys, "settrace", make)


def _configure_lines(value):
    from . import _lines
    auto, specs = _lines.parse(value)
    _state["specs"] = specs
    _state["none"] = not auto and not specs
    _state["auto"] = auto
    _state["library"] = _lines.library_prefixes()
    _native.set_preparer(_lines.prepare)
    _native.set_excluded(_state["library"])
    _native.set_loaders(_lines.LOADERS)
    _native.set_frameworks(_lines.FRAMEWORKS, _lines.NOT_FRAMEWORKS)
    _native.set_auto(auto)
    if (auto or specs) and sys.version_info < (3, 12):
        _wrap_settrace()
    parts = (["auto"] if auto else []) + [s.text for s in specs]
    _state["lines"] = "+".join(parts) if parts else "off"
    if specs:
        _native.set_decider(_lines.Decider(specs))
    _note_lines()


def _at_exit():
    if not _state["bound"]:
        return
    _native.close_thread()
    # A spec is matched by whatever got selected, by the decider or otherwise (@profile, auto).
    real = {}
    for filename, name, qualname, _, first in _native.selected():
        if qualname is None:  # CPython 3.10
            from . import _lines
            qualname = functools.partial(_lines.qualname_at, filename, first, name)
        for s in _state["specs"]:
            if not s.matched:
                s.matched = s.matches(filename, name, qualname,
                                      lambda f: real.setdefault(f, os.path.realpath(f)))
    unmatched = [s.text if s.file_known() else f"{s.text} (no file of that name was loaded: {s.file})"
                 for s in _state["specs"] if not s.matched]
    if unmatched and not _state["warned"]:
        _state["warned"] = True
        profiled = min(_state["loader_forks"], _state["loader_limit"])
        if profiled > 0 and not _state["worker"]:
            # A DataLoader worker traces what ran in it into its own profile.
            print(f"gnnprof: warning: --lines {', '.join(unmatched)}: no function that ran in the main process "
                  f"matched; its {profiled} profiled DataLoader workers trace in their own profiles (if it matched "
                  "nothing there either, nothing was traced)", file=sys.stderr)
        else:
            print(f"gnnprof: warning: --lines {', '.join(unmatched)}: no function that ran matched; "
                  "nothing traced for it", file=sys.stderr)
    _note_lines(final=True)
    # An uncaught KeyboardInterrupt (Ctrl-C) ends CPython by SIGINT after this, with its
    # default action: the C atexit flush never runs. The profile is written now.
    last = getattr(sys, "last_type", None)
    if isinstance(last, type) and issubclass(last, KeyboardInterrupt):
        _native.flush()


def _watch_torch_threads():
    """torch's compute threads as a counter ("torch threads": its last sample is the loop's) at
    each torch.set_num_threads(n) of the program's (and as DataLoader workers start), so that the
    report knows a loop that keeps its one thread busy on two CPUs from one starved of work. Not
    at import: a process that only imports torch (a launcher that spawns the loop) records
    nothing."""
    torch = sys.modules["torch"]
    set_threads = getattr(torch, "set_num_threads", None)
    if set_threads is None or getattr(set_threads, "_gnnprof_wrapped", False):
        return

    @functools.wraps(set_threads)
    def set_num_threads(n):
        result = set_threads(n)
        try:
            counter("torch threads", torch.get_num_threads())
        except Exception:  # never into the host
            pass
        return result
    set_num_threads._gnnprof_wrapped = True
    torch.set_num_threads = set_num_threads


def _name_threads():
    """Each Python thread started from now on gives the profile its threading name ("trainer",
    "Thread-1 (_pin_memory_loop)"); one that never records takes no slot for it."""
    import threading
    inner = threading.Thread._bootstrap_inner
    if getattr(inner, "_gnnprof_wrapped", False):
        return

    @functools.wraps(inner)
    def _bootstrap_inner(self):
        try:
            _native.set_thread_name(str(self.name))
        except Exception:  # never into the host's thread
            pass
        inner(self)
    _bootstrap_inner._gnnprof_wrapped = True
    threading.Thread._bootstrap_inner = _bootstrap_inner


def _torch_imported():
    """Once torch is imported: a library the package loaded itself cannot see Python load torch,
    so it is told; then the module hooks, where the op observer runs."""
    if "torch" not in sys.modules:  # its import failed: nothing to hook (and no second import)
        return
    if _state["how"] == "loaded":
        _native.attach()
    from . import _config, _torch_hooks
    try:
        _watch_torch_threads()
    except Exception:  # a torch without set_num_threads: the report goes without its count
        pass
    _install_hooks("torch_modules", "torch-python", "torch's module hooks were not installed", "module hooks not installed",
                   lambda: _torch_hooks.install(_native, _config))


def _install_hooks(key, collector, why, short, install):
    """_state[key] = install(); where it raises, never into the host's import: said once, in the
    collector list (`why`) and on stderr (`short`)."""
    try:
        _state[key] = install()
    except Exception as e:
        _state[key] = "failed"
        _native.note_collector(collector, False, f"{why}: {type(e).__name__}: {e}")
        print(f"gnnprof: {collector}: {short} ({type(e).__name__}: {e})", file=sys.stderr)


def _numpy_imported():
    """Once numpy is imported: rows gathered from its memmaps are materializations."""
    from . import _config, _numpy_hooks
    _install_hooks("numpy_memmap", "numpy-memmap", "numpy.memmap reads are not recorded", "not recorded",
                   lambda: _numpy_hooks.install(_native, _config, sys.modules[__name__]))


def _fetcher_imported():
    """Once torch's fetchers are imported: batches fetched item by item are counted."""
    from . import _loader_fetch
    _install_hooks("loader_fetch", "loader-fetch", "item-by-item DataLoader fetches are not counted", "not counted",
                   lambda: _loader_fetch.install(_native, sys.modules[__name__]))


def _install_producer_waits():
    """The training loop's waits for the program's own producers are a data stage."""
    from . import _config, _producer_waits
    _install_hooks("producer_waits", "producer-waits", "the loop's waits for its producers are not recorded",
                   "not recorded", lambda: _producer_waits.install(_native, sys.modules[__name__], _config))


def _install_producers():
    """Auto selection traces the program's own producers where they hand a batch over."""
    from . import _producers
    _install_hooks("producers", "producer-hand-overs", "the program's own producers are found only at a torch gather or copy",
                   "producers found only at a torch gather or copy", lambda: _producers.install(_native, sys.modules[__name__]))


if _state["bound"]:
    from . import _attach, _config
    _configure_lines(_config.string("GNNPROF_LINES", "auto"))
    _state["loader_limit"] = _config.loader_workers()  # read once: every fork child inherits it
    _state["started_by"] = _started_by_multiprocessing()
    if not getattr(_native, "hooks_registered", False):  # once, even when the package is reloaded
        _native.hooks_registered = True  # (%reload_ext gnnprof: the same module dict, new globals)
        atexit.register(_at_exit)
        _name_threads()
        os.register_at_fork(after_in_child=_after_fork_in_child, after_in_parent=_after_fork_in_parent)
        _attach.after_import("multiprocessing.process", _wrap_process_start)
        _attach.after_import("torch.distributed.distributed_c10d", _wrap_init_process_group)
        if _state["started_by"]:
            import multiprocessing.process
            _wrap_process_run()
    _attach.after_import("torch", _torch_imported)
    _attach.after_import("numpy", _numpy_imported)
    _attach.after_import("torch.utils.data._utils.fetch", _fetcher_imported)
    _install_producer_waits()
    _install_producers()
    if _config.flag("GNNPROF_PREFETCH_LOADERS", False):
        from . import _prefetch
        _attach.after_import("torch.utils.data.dataloader", _prefetch.wrap_dataloader_iter)
    if _config.string("GNNPROF_PREFETCH_GENERATORS", ""):
        from . import _prefetch
        _prefetch.prefetch_generators(_config.string("GNNPROF_PREFETCH_GENERATORS", ""))
