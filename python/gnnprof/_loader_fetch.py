"""Batches a DataLoader fetches item by item. With a batch_size, torch's map-style fetcher calls
`dataset[i]` once per index of the batch, then collates the items (default_collate stacks them):
for a TensorDataset or a tensor of ids, hundreds of Python calls and tiny tensors a batch, where
one `dataset[indices]` would do (a BatchSampler as the sampler, batch_size=None). Its
`_MapDatasetFetcher.fetch` is Python, so it is wrapped here: each item-by-item fetch samples
three counters, named after what fetches (the dataset's kind and the collate function):

    DataLoader fetch items: <dataset> with <collate>    the batch's items
    DataLoader fetch ns: <dataset> with <collate>       the `dataset[i]` calls
    DataLoader collate ns: <dataset> with <collate>     the collate function

<dataset> is TensorDataset, Tensor, ndarray or "Subset of" one of them, which take a list of
indices as they are; any other dataset is "<class> (its own __getitem__)". A list, tuple or
range of ids is not counted (cheap items, no list index). A fetch in an
iteration whose torch ops the observer watches (its per-op cost is in the time) samples the
same counters with "(ops observed)" after "fetch items", "fetch ns" and "collate ns"; the
report takes the unobserved ones where there are enough. The report's
item-by-item-fetch rule reads them (reports/src/analysis.cpp). A fetch that runs no per-item
loop (no batch_size; a dataset with its own __getitems__) passes through, as does every fetch
while no session runs.
"""
import os
import sys
import time

from . import _attach

PREFIXES = ("DataLoader fetch items", "DataLoader fetch ns", "DataLoader collate ns")  # reports/loader_fetch.h
OBSERVED = " (ops observed)"
OWN = " (its own __getitem__)"


def _batchable(ds, depth=0):
    """The label of a dataset that indexes a list of indices as it is, else None."""
    torch = sys.modules.get("torch")
    np = sys.modules.get("numpy")
    kind = type(ds)
    if torch is not None and isinstance(ds, torch.Tensor):
        return "Tensor"
    if np is not None and kind is np.ndarray:
        return "ndarray"
    data = sys.modules.get("torch.utils.data")
    if data is None:
        return None
    if kind is getattr(data, "TensorDataset", None):
        return "TensorDataset"
    if kind is getattr(data, "Subset", None) and depth < 4:
        inner = _batchable(getattr(ds, "dataset", None), depth + 1)
        return f"Subset of {inner}" if inner is not None else None
    return None


def _per_item(ds):
    """Whether torch's fetcher indexes `ds` once per item (no __getitems__ of its own; a Subset's
    __getitems__ of torch 2 loops over its items where its dataset has none). A builtin sequence
    (a range or list of ids) is left out: its items cost little, and it takes no list of indices."""
    if isinstance(ds, (list, tuple, range)):
        return False
    if not getattr(ds, "__getitems__", None):
        return True
    data = sys.modules.get("torch.utils.data")
    return type(ds) is getattr(data, "Subset", None) and not getattr(getattr(ds, "dataset", None), "__getitems__", None)


def _label(fetcher):
    ds = fetcher.dataset
    kind = _batchable(ds) or f"{type(ds).__name__}{OWN}"
    collate = fetcher.collate_fn
    name = getattr(collate, "__qualname__", None) or type(collate).__name__
    return f"{kind} with {name}"


def install(native, api):
    """Wraps torch's _MapDatasetFetcher.fetch once per process (a reloaded package or a fork
    finds it wrapped). Returns what was done, for the tests."""
    cls, original, done = _attach.method_to_wrap("torch.utils.data._utils.fetch", "_MapDatasetFetcher", "fetch",
                                                 "no fetcher")
    if done:
        return done
    state, clock = api._state, time.perf_counter_ns
    sites = {}  # (label, observed) -> (items, fetch ns, collate ns) counter sites
    os.register_at_fork(after_in_child=sites.clear)  # a worker's own profile notes the collector too

    def fetch_batch(self, possibly_batched_index):
        # A C callable times the collate: the collate function's frame keeps torch's fetch as its
        # caller, which the line tracer's data-pipeline selection looks at.
        collate = timed = None
        try:
            collate = self.collate_fn
            # A Timed already there: another thread's fetch on this fetcher is running; this one
            # passes through rather than take it for the collate function.
            if (state["bound"] and self.auto_collation and native.is_running() and not isinstance(collate, native.Timed)
                    and _per_item(self.dataset)):
                timed = native.Timed(collate)
        except Exception:  # never into the host's fetch
            timed = None
        if timed is None:
            return original(self, possibly_batched_index)
        self.collate_fn = timed
        start = clock()
        try:
            batch = original(self, possibly_batched_index)
        finally:  # a fetch that raises passes its exception on, uncounted
            total = clock() - start
            self.collate_fn = collate
        took = timed.ns
        try:
            label = self.__dict__.get("_gnnprof_label")
            if label is None:
                label = self._gnnprof_label = _label(self)
            observed = native.torch_observing() == 1
            site = sites.get((label, observed))
            if site is None:
                if not sites:
                    native.note_collector("loader-fetch", True, "batches a DataLoader fetches item by item (a "
                                          "batch_size over a map-style dataset) are timed: their items, the "
                                          "dataset[i] calls and the collate (torch's _MapDatasetFetcher.fetch)")
                tail = f"{OBSERVED if observed else ''}: {label}"
                site = sites[(label, observed)] = tuple(native.counter_site(p + tail) for p in PREFIXES)
            native.counter(site[0], float(len(possibly_batched_index)))
            native.counter(site[1], float(total - took))
            native.counter(site[2], float(took))
        except Exception:  # never into the host's fetch
            pass
        return batch

    _attach.replace_method(cls, "fetch", fetch_batch, original)
    return "installed"
