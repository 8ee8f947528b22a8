"""gnnprof.prefetch(): prepares batches of any loader ahead of the training loop, on a thread of
its own, and profiles itself the way the C++ Prefetcher does.

    loader = gnnprof.prefetch(DataLoader(...), device="cuda")     # depth: GNNPROF_PREFETCH or 2
    for epoch in range(epochs):
        for x, y in loader:                                         # the same batches, in order
            ...

* depth K: at most K batches in flight (prepared or being prepared, not yet taken). K = 0 runs
  everything inline in the loop: the baseline, the same code, so an A/B differs only by overlap.
  depth=None reads GNNPROF_PREFETCH through gnnprof's config table (the C++ resolve_depth).
* prepare(batch): a function run on each batch before it is moved (e.g. touch a DGL block's
  lazy `srcdata["x"]` so that its features are gathered ahead).
* device: tensors anywhere in the batch (tuples, lists, dicts, dataclasses, named tuples) are
  copied there through a staging ring on a side stream (gnnprof._staging); objects with a
  `.to(device, non_blocking=...)` method (DGL blocks, PyG Data) move themselves on that stream.
* A loader's exception is raised in the loop at the batch where it happened. No time limit:
  a slow loader is waited for. `len()`, `break`, deleting the iterator mid-epoch and a new
  epoch work, and leave no thread behind (the producer is joined).
* Compute's threads (on the CPU): whether torch's intra-op threads keep every core while the
  producer fills their gaps, or leave one to the producer, is measured on the first prefetched
  batches and the faster kept (GNNPROF_PREFETCH_THREADS=auto|all|split; the C++ CoreSplit). The
  epoch's end gives compute its threads back; the collector "prefetch-threads" says what was
  chosen and why.
* Self-profiling: `loader_wait` (data) around the loop's wait = data time exposed on the critical
  path; the producer runs on a thread named `prefetch-0` with stages `load` (pulling the
  loader), `prepare` and `h2d` = hidden data time; the counter `prefetch_queue_depth` = ready
  batches at each take; copied bytes as pinned async h2d transfers.
"""
import contextlib
import copy
import dataclasses
import os
import sys
import threading
import time
import types
import weakref

MAX_DEPTH = 64  # as the C++ kMaxDepth


def resolve_depth(depth, default=2):
    """depth when given; else GNNPROF_PREFETCH through gnnprof's config table (the C++
    resolve_depth: an integer in 0..MAX_DEPTH, else one warning and `default`)."""
    if depth is not None:
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= MAX_DEPTH:
            raise ValueError(f"gnnprof.prefetch: depth must be an integer in 0..{MAX_DEPTH}, not {depth!r}")
        return depth
    from . import _config
    return _config.count("GNNPROF_PREFETCH", default)


def _device_for(device):
    if device is None:
        return None
    from . import _staging
    if isinstance(device, _staging.Device):
        return device
    import torch
    d = torch.device(device)
    if d.type == "cpu":
        return None
    if d.type == "cuda":
        return _staging.CudaDevice(d)
    raise ValueError(f"gnnprof.prefetch: cannot stage batches for device {d}")


class _Moved:
    """A batch moved to the device: what the consumer must wait for before using it."""
    __slots__ = ("batch", "slot", "event", "tensors")

    def __init__(self, batch, slot, event, tensors):
        self.batch, self.slot, self.event, self.tensors = batch, slot, event, tensors


def _move(obj, dev, slot, tensors, depth=0):
    if depth > 64:
        return obj
    if dev.is_tensor(obj):
        t = dev.stage(slot, len(tensors), obj)
        tensors.append(t)
        return t
    if isinstance(obj, tuple):
        items = [_move(x, dev, slot, tensors, depth + 1) for x in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, list):
        return type(obj)(_move(x, dev, slot, tensors, depth + 1) for x in obj)
    if isinstance(obj, dict):
        out = copy.copy(obj)
        for k, v in obj.items():
            out[k] = _move(v, dev, slot, tensors, depth + 1)
        return out
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = copy.copy(obj)
        for f in dataclasses.fields(obj):
            object.__setattr__(out, f.name, _move(getattr(obj, f.name), dev, slot, tensors, depth + 1))
        return out
    to = getattr(obj, "to", None)
    if callable(to) and dev.target is not None and not isinstance(obj, type):
        with dev.side_stream():
            try:
                return to(dev.target, non_blocking=True)
            except TypeError:
                return to(dev.target)
    return obj


class _Error:
    __slots__ = ("exc",)

    def __init__(self, exc):
        self.exc = exc


_END = object()


class _State:
    """What an epoch's producer thread and its consumer share. Holds no reference to the
    consumer's iterator, so that dropping the iterator (break, del) collects it and stops the
    producer (weakref.finalize)."""

    def __init__(self, depth, ring):
        self.depth = depth
        self.ring = ring
        self.cv = threading.Condition()
        self.ready = []          # produced items, in order
        self.in_flight = 0       # taken from the loader, not yet taken by the consumer
        self.max_in_flight = 0
        self.stop = False
        self.thread = None

    def close(self):
        """Ends the epoch: stops the producer after the batch it is making, joins it, and gives
        the ring's slots back (the consumer holds none any more)."""
        with self.cv:
            self.stop = True
            self.cv.notify_all()
        if self.ring is not None:
            self.ring.release_all()  # a producer waiting for a slot wakes up and sees stop
        t = self.thread
        if t is not None and t is not threading.current_thread():
            t.join()  # a batch being produced is finished, never interrupted
        if self.ring is not None:
            self.ring.release_all()


def _loop_cuda_device():
    """The loop thread's current CUDA device where CUDA is initialized (torch keeps it per
    thread: a collate_fn's .cuda() after set_device(local_rank) must land there), else None."""
    torch = sys.modules.get("torch")
    try:
        return torch.cuda.current_device() if torch is not None and torch.cuda.is_initialized() else None
    except Exception:
        return None


_producing = threading.local()


def _produce(state, it, prefetcher_ref, api, cuda_device=None):
    """The producer thread: pull, prepare and move batches, at most `depth` in flight."""
    pf = prefetcher_ref()
    prepare, dev, ring = (pf.prepare, pf._dev, pf._ring) if pf is not None else (None, None, None)
    del pf
    _producing.active = True  # a DataLoader pass made from here is prefetched already
    load = prep = h2d = contextlib.nullcontext()
    try:  # gnnprof's own bookkeeping: never the loop's error, never a producer that posts nothing
        if cuda_device is not None:
            sys.modules["torch"].cuda.set_device(cuda_device)
        api.set_thread_name("prefetch-0")
        api._feeds_loop()  # its loader's user code (a Dataset's __getitem__, a collate_fn) is traced here
        load, prep, h2d = api.stage("load", "data"), api.stage("prepare", "data"), api.stage("h2d", "data")
    except Exception:
        pass
    while True:
        with state.cv:
            state.cv.wait_for(lambda: state.stop or state.in_flight < state.depth)
            if state.stop:
                return
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            with load:
                item = next(it)
        except StopIteration:
            item = _END
        except BaseException as e:  # raised in the loop at this batch
            item = _Error(e)
        if item is not _END and not isinstance(item, _Error):
            try:
                if prepare is not None:
                    with prep:
                        item = prepare(item)
                if dev is not None:
                    with h2d:
                        item = _stage_batch(item, dev, ring, api)
            except BaseException as e:
                item = _Error(e)
        with state.cv:
            state.ready.append(item)
            state.cv.notify_all()
        if item is _END or isinstance(item, _Error):
            return


def _stage_batch(item, dev, ring, api):
    slot = ring.acquire()
    dev.begin(slot)
    tensors = []
    moved = _move(item, dev, slot, tensors)
    event = dev.record(slot)
    slot.copy_done = event
    nbytes = sum(_nbytes(t) for t in tensors)
    if nbytes:
        api.record_transfer(nbytes, "h2d", "pinned", "async")
    return _Moved(moved, slot, event, tensors)


def _nbytes(t):
    try:
        return t.numel() * t.element_size()
    except AttributeError:
        return 0


class _CoreSplit:
    """Compute's threads while the producer thread prefetches on the CPU, as the C++
    gnnprof/prefetch/core_split.h: torch's intra-op threads as they are, the producer filling
    their gaps ("all"), or one fewer, the producer on a core of its own ("split"). Which is
    faster depends on the machine. GNNPROF_PREFETCH_THREADS: auto (the core's block trial on the
    first prefetched batches measures both and keeps the faster), all or split. The choice goes
    to the collector list as "prefetch-threads", every switch to the counter "compute_threads"."""

    def __init__(self, api, torch, on_gpu):
        self.api, self.torch = api, torch
        self.all = torch.get_num_threads()
        self.split = self.all - 1
        from . import _config
        self.mode = _config.string("GNNPROF_PREFETCH_THREADS", "auto")
        self.why = None
        if on_gpu:
            self.split, self.why = self.all, "compute runs on a GPU: the producer takes no CPU from it"
        elif self.split < 1:
            self.split, self.why = self.all, "no core to spare for a producer"
        self.threads = self.all
        self.arm = 0
        self.trial = None
        if self.mode == "auto" and self.split != self.all:
            native = api._native if api._state["bound"] else None
            self.trial = native.trial_new(2, 2, 4, 2, 0.02) if native is not None else None
            if self.trial is None:
                self.mode, self.why = "all", "gnnprof's library has no block trial here"
        self.started = False
        self.reported = False

    def _name(self, n):
        s = f"{n} compute thread{'' if n == 1 else 's'}"
        return s + (", the producer on a core of its own" if n == self.split else
                    ", the producer thread in their gaps")

    def describe(self):
        if self.why is not None:
            return f"{self.all} compute thread{'' if self.all == 1 else 's'}: {self.why}"
        if self.mode != "auto":
            return f"{self._name(self.split if self.arm else self.all)} (GNNPROF_PREFETCH_THREADS={self.mode})"
        chosen, arms = self.api._native.trial_state(self.trial, 2)
        if chosen < 0:
            return f"trying {self._name(self.all)}, and {self._name(self.split)}"
        (mc, nc), (mo, no) = arms[chosen], arms[1 - chosen]
        other = self.all if chosen == 1 else self.split
        return (f"{self._name(self.split if chosen else self.all)}: median iteration {mc / 1e6:.1f} ms against "
                f"{mo / 1e6:.1f} ms with {other} compute thread{'' if other == 1 else 's'} "
                f"({nc} and {no} prefetched iterations measured)")

    def _set(self, n):
        if n == self.threads:
            return
        self.threads = n
        try:
            self.torch.set_num_threads(n)
        except Exception:  # never into the host program
            pass
        self.api.counter("compute_threads", n)

    def _report(self):
        if not self.reported and self.api._state["bound"]:
            self.reported = True
            self.api._native.note_collector("prefetch-threads", True, self.describe())

    def on_iteration(self, first_of_epoch):
        if not self.started:
            self.started = True
            self.api.counter("compute_threads", self.threads)
        if self.trial is not None:
            native = self.api._native
            if first_of_epoch:
                native.trial_restart(self.trial)  # the time since the last epoch is no iteration
            arm = native.trial_iteration(self.trial, time.monotonic_ns())
            if arm >= 0:
                self.arm = arm
            if native.trial_state(self.trial, 2)[0] >= 0:
                self._report()
        else:
            self.arm = 1 if self.mode == "split" else 0
            self._report()
        self._set(self.split if self.arm else self.all)

    def idle(self):
        """No producer runs (the epoch is over): compute gets its threads back."""
        self._set(self.all)


def _end_epoch(state, pf):
    """Stops the epoch's producer; compute gets its threads back (pf's _CoreSplit)."""
    state.close()
    if pf._split is not None:
        try:
            pf._split.idle()
        except Exception:
            pass


class _Epoch:
    """One pass over the loader: the iterator `for batch in prefetcher` uses."""

    def __init__(self, pf):
        _api = sys.modules[__package__]
        self._api = _api
        self._pf = pf
        self._held = None  # the _Moved batch the consumer has now (released at the next take)
        self._done = False
        it = iter(pf.loader)
        self._it = it
        self.state = _State(pf.depth, pf._ring)
        # Dropping this iterator (break, del, the end of a loop) ends the epoch.
        self._finalizer = weakref.finalize(self, _end_epoch, self.state, pf)
        self._wait = _api.stage("loader_wait", "data")
        self._first = True
        if pf.depth > 0:  # last: nothing after the start may fail with the producer pulling
            t = threading.Thread(target=_produce, args=(self.state, it, weakref.ref(pf), _api, _loop_cuda_device()),
                                 name="prefetch-0", daemon=True)
            self.state.thread = t
            t.start()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._pf)  # as a DataLoader's own iterator answers

    def __getattr__(self, name):
        # The wrapped iterator's own attributes (a DataLoader iterator's _num_yielded,
        # _shutdown_workers), for code that reads them from what zero-code prefetch handed out.
        it = self.__dict__.get("_it")
        if it is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(it, name)

    def _release_held(self):
        held, self._held = self._held, None
        if held is not None:
            self._pf._dev.released(held.tensors)
            self._pf._ring.release(held.slot)

    def __next__(self):
        if self._done:
            raise StopIteration
        self._release_held()
        pf = self._pf
        if pf.depth == 0:
            return self._inline()
        st = self.state
        with self._wait:
            with st.cv:
                st.cv.wait_for(lambda: st.ready)
                self._api.counter("prefetch_queue_depth", len(st.ready))  # ready at the take, as in C++
                item = st.ready.pop(0)
                st.in_flight -= 1
                st.cv.notify_all()
        if item is _END:
            self._finish()
            raise StopIteration
        if isinstance(item, _Error):
            self._finish()
            raise item.exc
        split = pf._core_split()
        if split is not None:  # at each batch taken (the C++ one: each next()); not at the end
            try:
                split.on_iteration(self._first)
            except Exception:  # never into the loop: compute keeps all its threads from here on
                pf._split = None
                try:
                    split.idle()
                except Exception:
                    pass
            self._first = False
        return self._hand_over(item)

    def _inline(self):
        pf = self._pf
        # Inline, as the C++ Prefetcher at K = 0: the loader's own stages (and the op observer's)
        # run on the loop thread; no loader_wait around them (it would nest data in data).
        try:
            item = next(self._it)
        except StopIteration:
            self._finish()
            raise
        except BaseException:
            self._finish()
            raise
        try:
            if pf.prepare is not None:
                item = pf.prepare(item)
            if pf._dev is not None:
                item = _stage_batch(item, pf._dev, pf._ring, self._api)
        except BaseException:
            self._finish()
            raise
        return self._hand_over(item)

    def _hand_over(self, item):
        if isinstance(item, _Moved):
            self._pf._dev.wait_consumer(item.event, item.tensors)
            self._held = item
            return item.batch
        return item

    def _finish(self):
        self.close()

    def close(self):
        """Stops the producer (after the batch it is making) and joins it."""
        self._done = True
        self._release_held()
        self._finalizer()


_noted = False  # the collector "prefetch" noted


class Prefetcher:
    """An iterable over `loader`'s batches, prepared up to `depth` ahead (see the module doc)."""

    def __init__(self, loader, depth=None, device=None, prepare=None):
        self.loader = loader
        self.depth = resolve_depth(depth)
        self.prepare = prepare
        self._dev = _device_for(device)
        # One side stream and one staging ring for the prefetcher's whole life, never one per
        # epoch (per-epoch streams made reserved GPU memory grow in timm #2781, GraphBolt #6954).
        self._ring = None
        if self._dev is not None:
            from . import _staging
            self._ring = _staging.StagingRing(self._dev, self.depth + 1)
        self._epoch = None
        self._split = None
        self._split_checked = False

    def _core_split(self):
        """The _CoreSplit of a CPU prefetcher, made at its first prefetched batch (when the
        loop's torch and its threads are set up); None where there is nothing to choose."""
        if not self._split_checked:
            self._split_checked = True
            torch = sys.modules.get("torch")
            if torch is not None and self._dev is None:
                try:
                    on_gpu = bool(torch.cuda.is_initialized())
                    self._split = _CoreSplit(sys.modules[__package__], torch, on_gpu)
                except Exception:
                    self._split = None
        return self._split

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        old = self._epoch() if self._epoch is not None else None
        if old is not None:
            old.close()
        api = sys.modules[__package__]
        api._select_pipeline(self.loader, self.prepare)
        global _noted
        if not _noted and api._native is not None:  # the profile says the program uses a prefetcher
            _noted = True
            try:
                api._native.note_collector("prefetch", True, f"the program pulls batches through gnnprof.prefetch (depth "
                                                             f"{self.depth} at its first pass)")
            except Exception:
                pass
        epoch = _Epoch(self)
        self._epoch = weakref.ref(epoch)
        return epoch

    def close(self):
        old = self._epoch() if self._epoch is not None else None
        if old is not None:
            old.close()

    @property
    def streams_created(self):
        return self._dev.streams_created if self._dev is not None else 0

    @property
    def buffers_allocated(self):
        return self._dev.buffers_allocated if self._dev is not None else 0


def prefetch(loader, depth=None, device=None, prepare=None):
    """Wraps any iterable of batches (a DataLoader, a DGL or PyG loader, a generator); see the
    module doc of gnnprof._prefetch."""
    return Prefetcher(loader, depth=depth, device=device, prepare=prepare)


# ---- zero-code: GNNPROF_PREFETCH_GENERATORS=FILE:QUALNAME[,...] ----

def prefetch_generators(spec):
    """Each call of the generator functions named in `spec` (FILE:QUALNAME entries split by ',':
    gnnprof ab sets it when its first run found the loop pulling from one) returns a Prefetcher's
    iterator over the generator at GNNPROF_PREFETCH's depth (0: inline, the baseline's code), so
    that an unmodified script's A/B differs only by overlap. A PEP 523 frame hook replaces the
    call's result (CPython 3.11: the tracer's, tracer.c; 3.12 and 3.13: one of its own,
    tracer_monitor.c); elsewhere the collector says it is off. The
    iterator has no send/throw/close: it is meant for a `for` over the generator, as the run
    that named it showed."""
    api = sys.modules[__package__]
    targets = []
    for item in spec.split(","):
        path, sep, qualname = item.strip().rpartition(":")
        if sep and path and qualname:
            targets.append((path, qualname))
    names = ", ".join(f"{q}() of {os.path.basename(p)}" for p, q in targets)
    calls = {"n": 0}

    def wrap(gen):
        it = iter(Prefetcher(gen))
        calls["n"] += 1
        if calls["n"] == 1:
            api._native.note_collector(
                "prefetch-generators", True,
                f"each call of {names} runs through gnnprof.prefetch at depth {it._pf.depth} "
                f"(GNNPROF_PREFETCH_GENERATORS; GNNPROF_PREFETCH sets the depth, 0: inline)")
        return it

    why = None
    try:
        if not targets:
            why = f"GNNPROF_PREFETCH_GENERATORS={spec!r} names no FILE:QUALNAME"
        elif not api._native.prefetch_generators(targets, wrap):
            why = (f"this Python ({sys.version.split()[0]}) makes a generator where gnnprof's tracer cannot replace "
                   f"it (CPython 3.11 to 3.13 only); wrap it by hand: gnnprof.prefetch({targets[0][1]}(...))")
    except Exception as e:  # never into the host
        why = f"{type(e).__name__}: {e}"
    if why is not None:
        sys.stderr.write(f"gnnprof: prefetch-generators: {why}\n")
        try:
            api._native.note_collector("prefetch-generators", False, why)
        except Exception:
            pass


# ---- zero-code: GNNPROF_PREFETCH_LOADERS=1 ----

class _OnePass:
    """One pass's iterator over a DataLoader, as the loader a Prefetcher pulls from once."""

    def __init__(self, it, loader):
        self._it = it
        self._loader = loader

    def __iter__(self):
        return self._it

    def __len__(self):
        return len(self._loader)


# Iterators a loop may wrap its DataLoader in (`for b in tqdm(loader)`): looked through.
_PASS_THROUGH = ("/tqdm/", "/rich/progress")


def _from_user_code(frame, library):
    """Whether the pass is made by the program's own code: the frame iterating, after progress
    bars, is a file outside the library prefixes (not a framework's fetcher, nor gnnprof's own
    prefetcher, which iterates the loader it wraps)."""
    for _ in range(4):
        if frame is None:
            return False
        f = frame.f_code.co_filename
        if not any(p in f for p in _PASS_THROUGH):
            return not f.startswith(library) and not f.startswith("<frozen")
        frame = frame.f_back
    return False


def _in_loader_iter(frame, cls):
    """Whether the call comes from a DataLoader's own __iter__ (a subclass's, or a generator
    __iter__ whose body runs after the pass began): that pass is the outer one."""
    return frame.f_code.co_name == "__iter__" and isinstance(frame.f_locals.get("self"), cls)


def wrap_dataloader_iter():
    """torch's DataLoader.__iter__, wrapped: each pass the program's own code makes over a
    DataLoader (`for x, y in loader:`) runs through a Prefetcher at GNNPROF_PREFETCH's depth (0:
    inline, the same code as the baseline; else 2 by default), so that an unmodified script runs
    baseline and prefetched (gnnprof ab sets GNNPROF_PREFETCH_LOADERS=1 for a Python command).
    Passes a framework makes (Lightning's fetcher) keep their iterator: it reads its internals.
    A subclass whose __iter__ is not torch's (DGL's DataLoader wraps torch's iterator in its
    own; a mixin's) gets the __iter__ it resolves to wrapped on its own class when a loader of
    it is made: the pass is the outermost __iter__ call; the calls it makes (super().__iter__(),
    also from a generator __iter__, or on a producer thread) return their iterators unchanged."""
    api = sys.modules[__package__]
    cls = getattr(sys.modules.get("torch.utils.data.dataloader"), "DataLoader", None)
    if cls is None:
        return
    library = tuple(api._state.get("library") or ())
    notes = {"passes": 0}
    inside = threading.local()

    def make(original):
        def __iter__(self):
            if getattr(inside, "depth", 0) or getattr(_producing, "active", False) or not isinstance(self, cls):
                return original(self)
            inside.depth = 1
            try:
                it = original(self)
            finally:
                inside.depth = 0
            try:
                caller = sys._getframe(1)
                if _in_loader_iter(caller, cls) or not _from_user_code(caller, library):
                    return it
                epoch = iter(Prefetcher(_OnePass(it, self)))
            except Exception:  # never into the loop: the loader's own iterator (no producer started)
                return it
            try:
                notes["passes"] += 1
                if notes["passes"] == 1 and api._native is not None:
                    api._native.note_collector(
                        "prefetch-loaders", True,
                        f"each pass the program's own code makes over a torch DataLoader runs through gnnprof.prefetch "
                        f"at depth {epoch._pf.depth} (GNNPROF_PREFETCH_LOADERS=1; GNNPROF_PREFETCH sets the depth, 0: "
                        f"inline)")
            except Exception:
                pass
            return epoch
        return __iter__

    def wrap_class(c):
        """c's __iter__ as it resolves (its own, a mixin's, a library base's), wrapped on c: a
        plain function only (a descriptor keeps its own calling rules), once."""
        if c is not cls and isinstance(getattr(c, "__iter__", None), types.FunctionType):
            api._wrap_once(c, "__iter__", make, inherited=True)

    def make_init(original):
        def __init__(self, *args, **kwargs):
            original(self, *args, **kwargs)
            try:
                wrap_class(type(self))
            except Exception:
                pass
        return __init__

    api._wrap_once(cls, "__iter__", make)
    api._wrap_once(cls, "__init__", make_init)
