"""Feature reads from a numpy memmap: a large graph's features kept on disk (np.memmap,
np.load(..., mmap_mode=...)) and gathered by node ids, as DGL's MAG240M example does in its
collate_fn (`torch.FloatTensor(self.feats[input_nodes])`). Numpy runs no torch op, so the op
observer cannot see that gather, but memmap's __getitem__ is Python, so it is wrapped here: an
index whose first axis picks rows (an array, a tensor or a list of them) on a memmap of at
least GNNPROF_GATHER_MIN_BYTES becomes a "materialize" data stage with the rows and bytes it
read, on the current line and stage, as the observer records a torch gather. A basic index (an
int, a slice) reads nothing yet and passes through; so does everything while no session runs,
and in an iteration whose torch ops the observer leaves unobserved (iteration sampling): the
reports scale a line's gathers from its observed hits, the observer's and these alike.

Each recorded read also samples the counter "memmap major faults": the calling thread's major
page faults during it (getrusage(RUSAGE_THREAD)), the pages it had to read from storage, which
the loop's report quotes for its DataLoader workers (loader-bound) and for its own reads
(exposed-data-time): a loader that waits on the disk.
"""
import os

from . import _attach

MAJOR_FAULTS_COUNTER = "memmap major faults"  # reports/loader_workers.h: kMemmapFaultsCounter


def _picks_rows(index):
    """Whether `index` gathers rows along the first axis (numpy's advanced indexing there)."""
    if type(index) is tuple:
        if not index:
            return False
        index = index[0]
    if isinstance(index, (list, range)):
        return True
    ndim = getattr(index, "ndim", None)  # an ndarray or tensor of ids, or a mask; not a 0-d scalar
    return isinstance(ndim, int) and ndim >= 1


def install(native, config, api):
    """Wraps numpy.memmap.__getitem__ once per process (a reloaded package finds it wrapped).
    Returns what was done, for the tests."""
    cls, original, done = _attach.method_to_wrap("numpy", "memmap", "__getitem__", "no memmap")
    if done:
        return done
    min_bytes = config.count("GNNPROF_GATHER_MIN_BYTES", 1 << 20)
    stage = native.Stage("materialize", "data")
    try:
        import resource
        usage, who = resource.getrusage, resource.RUSAGE_THREAD
        usage(who)
    except (ImportError, AttributeError, OSError, ValueError):  # not Linux: no fault counts
        usage = who = None
    faults_site = native.counter_site(MAJOR_FAULTS_COUNTER) if usage is not None else 0
    noted = []
    os.register_at_fork(after_in_child=noted.clear)  # a worker's own profile notes it too
    state = api._state

    def __getitem__(self, index):
        kind = type(index)
        if kind is int or kind is slice or not (state["bound"] and _picks_rows(index) and self.nbytes >= min_bytes) \
                or native.torch_observing() == 0:
            return original(self, index)
        with stage:
            try:
                before = usage(who).ru_majflt if usage is not None else None
            except Exception:  # never into the host's read
                before = None
            res = original(self, index)
            try:
                if before is not None:
                    native.counter(faults_site, float(usage(who).ru_majflt - before))
                shape = getattr(res, "shape", ())
                native.materialize(int(shape[0]) if shape else 1, int(res.nbytes))
                if not noted:
                    noted.append(True)
                    native.note_collector("numpy-memmap", True, "rows gathered from numpy memmaps of at least "
                                          f"{min_bytes} bytes are materializations (numpy.memmap.__getitem__)")
            except Exception:  # never into the host's read
                pass
        return res

    _attach.replace_method(cls, "__getitem__", __getitem__, original)
    return "installed"
