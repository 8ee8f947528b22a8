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
* Self-profiling: `loader_wait` (data) around the loop's wait = data time exposed on the critical
  path; the producer runs on a thread named `prefetch-0` with stages `load` (pulling the
  loader), `prepare` and `h2d` = hidden data time; the counter `prefetch_queue_depth` = ready
  batches at each take; copied bytes as pinned async h2d transfers.
"""
import copy
import dataclasses
import sys
import threading
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


def _produce(state, it, prefetcher_ref, api):
    """The producer thread: pull, prepare and move batches, at most `depth` in flight."""
    pf = prefetcher_ref()
    prepare, dev, ring = (pf.prepare, pf._dev, pf._ring) if pf is not None else (None, None, None)
    del pf
    api.set_thread_name("prefetch-0")
    load, prep, h2d = api.stage("load", "data"), api.stage("prepare", "data"), api.stage("h2d", "data")
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
        self._finalizer = weakref.finalize(self, _State.close, self.state)
        if pf.depth > 0:
            t = threading.Thread(target=_produce, args=(self.state, it, weakref.ref(pf), _api), name="prefetch-0",
                                 daemon=True)
            self.state.thread = t
            t.start()
        self._wait = _api.stage("loader_wait", "data")

    def __iter__(self):
        return self

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
        self._done = True
        self._release_held()
        self._finalizer()

    def close(self):
        """Stops the producer (after the batch it is making) and joins it."""
        self._done = True
        self._release_held()
        self._finalizer()


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

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        old = self._epoch() if self._epoch is not None else None
        if old is not None:
            old.close()
        sys.modules[__package__]._select_pipeline(self.loader, self.prepare)
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
