"""gnnprof.prefetch(): order, backpressure, errors, early exits and epochs, device staging through
the staging ring (with the CPU stand-in device that copies on its own thread), GNNPROF_PREFETCH,
and its self-profile under gnnprof run."""
import collections
import dataclasses
import gc
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import CLI, HERE, PYDIR, PYTHON, line_of, needs_torch, script


# The API without a session in this process (the package starts one when imported and at its
# first use), at import and in this module's tests only: another module's runs in the same pytest
# process (pytest-xdist collects every module in each worker) inherit the environment.
_ENABLED = os.environ.get("GNNPROF_ENABLED")


def _restore_enabled():
    if _ENABLED is None:
        os.environ.pop("GNNPROF_ENABLED", None)
    else:
        os.environ["GNNPROF_ENABLED"] = _ENABLED


os.environ["GNNPROF_ENABLED"] = "0"
sys.path.insert(0, PYDIR)
import gnnprof  # noqa: E402
from gnnprof import _prefetch, _staging  # noqa: E402
_restore_enabled()


@pytest.fixture(scope="module", autouse=True)
def no_session():
    os.environ["GNNPROF_ENABLED"] = "0"
    yield
    _restore_enabled()


def producers():
    return [t for t in threading.enumerate() if t.name == "prefetch-0"]


@pytest.fixture(autouse=True)
def no_thread_left():
    yield
    gc.collect()
    assert producers() == [], "a prefetch thread was left behind"


@pytest.mark.parametrize("depth", [0, 1, 4])
def test_same_batches_in_the_same_order(depth):
    data = [(i, [i] * 3, {"y": -i}) for i in range(50)]
    assert list(gnnprof.prefetch(data, depth=depth)) == data


def test_len_and_epochs_restart():
    pf = gnnprof.prefetch(list(range(20)), depth=3)
    assert len(pf) == 20
    assert len(iter(pf)) == 20  # an epoch's iterator too, as a DataLoader's answers (zero-code prefetch hands it out)
    for _ in range(3):
        assert list(pf) == list(range(20))


def test_an_epochs_iterator_passes_attribute_reads_to_the_loaders_iterator():
    """Zero-code prefetch hands the loop an epoch's iterator for a DataLoader's own: code that reads
    the latter's attributes (_num_yielded) still finds them."""
    class It:
        marker = 7

        def __iter__(self):
            return self

        def __next__(self):
            raise StopIteration

    class Loader:
        def __iter__(self):
            return It()

    for depth in (0, 2):
        epoch = iter(gnnprof.prefetch(Loader(), depth=depth))
        assert epoch.marker == 7
        with pytest.raises(AttributeError):
            epoch.missing
        assert list(epoch) == []


class Counting:
    """A loader that counts the batches pulled from it."""

    def __init__(self, n, delay=0.0):
        self.n, self.delay, self.pulled = n, delay, 0

    def __iter__(self):
        for i in range(self.n):
            if self.delay:
                time.sleep(self.delay)
            self.pulled += 1
            yield i


@pytest.mark.parametrize("depth", [1, 3])
def test_never_more_than_depth_ahead(depth):
    loader = Counting(40)
    taken = 0
    for _ in gnnprof.prefetch(loader, depth=depth):
        taken += 1
        time.sleep(0.002)  # a slow consumer: the producer runs ahead as far as it may
        assert loader.pulled - taken <= depth
    assert taken == 40


def test_a_slow_loader_is_waited_for_not_abandoned():
    assert list(gnnprof.prefetch(Counting(3, delay=0.3), depth=2)) == [0, 1, 2]


def failing(n_good):
    for i in range(n_good):
        yield i
    raise KeyError("batch 5 broke")


@pytest.mark.parametrize("depth", [0, 2])
def test_an_exception_is_raised_at_its_batch(depth):
    it = iter(gnnprof.prefetch(failing(5), depth=depth))
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    with pytest.raises(KeyError, match="batch 5 broke"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)


def test_early_break_and_deletion_leave_no_thread():
    pf = gnnprof.prefetch(Counting(1000), depth=4)
    for i in pf:
        if i == 3:
            break
    gc.collect()
    assert producers() == []
    it = iter(pf)
    next(it)
    del it
    gc.collect()
    assert producers() == []
    assert list(pf)[:3] == [0, 1, 2]  # a new epoch after both


def test_gnnprof_prefetch_env(monkeypatch, capfd):
    monkeypatch.setenv("GNNPROF_PREFETCH", "5")
    assert gnnprof.prefetch([], depth=None).depth == 5
    assert gnnprof.prefetch([], depth=1).depth == 1  # an explicit depth wins
    for bad in ("-1", "x", "65", " 2", "2.0"):
        monkeypatch.setenv("GNNPROF_PREFETCH", bad)
        assert gnnprof.prefetch([]).depth == 2
        err = capfd.readouterr().err
        assert err == f"gnnprof: ignoring GNNPROF_PREFETCH={bad} (expected an integer in 0..64); using 2\n"
    monkeypatch.setenv("GNNPROF_PREFETCH", "")  # empty is unset, as for every GNNPROF_* variable
    assert gnnprof.prefetch([]).depth == 2
    assert capfd.readouterr().err == ""
    monkeypatch.delenv("GNNPROF_PREFETCH")
    assert gnnprof.prefetch([]).depth == 2
    with pytest.raises(ValueError):
        gnnprof.prefetch([], depth=65)


def test_prefetch_env_without_the_native_module(monkeypatch, capfd):
    """GNNPROF_PREFETCH is read by gnnprof's library: through the process's C ABI when the
    native module is not bound (a Python of another ABI under gnnprof run), and not at all, said
    once, where no library is loaded."""
    from gnnprof import _config
    monkeypatch.setitem(gnnprof._state, "bound", False)
    monkeypatch.setenv("GNNPROF_PREFETCH", "7")
    assert gnnprof.prefetch([]).depth == 7  # the process has the C ABI (the library this test loaded)
    monkeypatch.setenv("GNNPROF_PREFETCH", "seven")
    assert gnnprof.prefetch([]).depth == 2
    assert capfd.readouterr().err == "gnnprof: ignoring GNNPROF_PREFETCH=seven (expected an integer in 0..64); using 2\n"
    monkeypatch.setattr(_config, "_process_abi", lambda: None)
    monkeypatch.setattr(_config, "_warned", set())
    assert gnnprof.prefetch([]).depth == 2
    assert gnnprof.prefetch([]).depth == 2
    assert capfd.readouterr().err == ("gnnprof: GNNPROF_PREFETCH is not read (gnnprof's library is not loaded in this "
                                      "Python); using 2\n")


# ---- moving to a device: the staging ring with the CPU stand-in device ----

Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Batch:
    x: object
    meta: str


class Movable:
    def __init__(self):
        self.calls = []

    def to(self, device, non_blocking=False):
        self.calls.append((device, non_blocking))
        return self


def H(*v):
    return _staging.HostData(v)


@pytest.mark.parametrize("depth", [0, 2])
def test_nested_batches_are_moved_through_the_ring(depth):
    dev = _staging.ThreadCopyDevice(delay=0.001)
    m = Movable()
    batches = [(H(i, i), [H(i)], {"k": H(i, 0)}, Pair(H(1), "s"), Batch(H(7, i), "meta"), m) for i in range(10)]
    n = 0
    # A stand-in device buffer is the ring's: valid until the next batch is taken.
    for i, (t, lst, d, p, b, mv) in enumerate(gnnprof.prefetch(batches, depth=depth, device=dev)):
        assert isinstance(t, _staging._DeviceView) and t.read() == [i, i]
        assert lst[0].read() == [i] and d["k"].read() == [i, 0]
        assert isinstance(p, Pair) and p.a.read() == [1] and p.b == "s"
        assert isinstance(b, Batch) and b.meta == "meta" and b.x.read() == [7, i]
        n += 1
    assert n == 10
    assert m.calls and all(c == ("standin", True) for c in m.calls)
    assert dev.violations == 0
    dev.close()


def test_a_reused_buffer_is_never_handed_out_while_its_copy_or_consumer_may_use_it():
    dev = _staging.ThreadCopyDevice(delay=0.0005)
    rng = random.Random(1)
    batches = [H(*[i] * 8) for i in range(300)]
    seen = []
    for t in gnnprof.prefetch(batches, depth=3, device=dev):
        first = t.read()
        time.sleep(rng.random() * 0.001)  # the consumer works on the batch
        assert t.read() == first, "the device buffer changed under the consumer"
        seen.append(first[0])
    assert seen == list(range(300))
    assert dev.violations == 0
    dev.close()


def test_one_stream_and_one_ring_for_fifty_epochs():
    dev = _staging.ThreadCopyDevice()
    pf = gnnprof.prefetch([(H(i, i), H(i)) for i in range(6)], depth=2, device=dev)
    counts = []
    for _ in range(50):
        assert [b[1].read()[0] for b in pf] == list(range(6))
        counts.append((pf.streams_created, pf.buffers_allocated))
    assert counts[0] == counts[-1] == (1, 3 * 2), counts[:3]  # depth + 1 slots x 2 tensors, once
    assert dev.violations == 0
    dev.close()


# ---- its self-profile under gnnprof run ----

@needs_torch
def test_under_gnnprof_run_loader_wait_is_exposed_and_the_producer_hidden(gnnprof_run):
    r = gnnprof_run(script("prefetch_loop.py"), "2")
    assert r.rc == 0, r.err
    p = r.profile
    threads = {t["index"]: t["name"] for t in p["threads"]}
    stages = {s["name"]: s for s in p["stages"]}
    wait = stages["loader_wait"]
    assert [t["thread"] for t in wait["by_thread"]] == [p["main_thread"]]
    load = stages["load"]
    assert {threads[t["thread"]] for t in load["by_thread"]} == {"prefetch-0"}
    assert any(c["name"] == "prefetch_queue_depth" for c in p["counters"])
    done = [i for i in p["iterations"] if i["complete"]]
    assert len(done) >= 20
    assert all("load" not in i["stages"] for i in done[2:])  # hidden: not on the loop thread
    assert sum(i["other_threads"].get("load", 0) for i in done) > 0
    # The loop's data pipeline (a generator behind the prefetcher) is traced on its thread
    # (where the package has its line tracer: not built with GNNPROF_PYTHON_LINES=OFF).
    if any(c["name"] == "python-lines" and c["enabled"] for c in p["collectors"]):
        assert r.lines("batches"), "the generator behind the prefetcher is traced"


# ---- zero-code: GNNPROF_PREFETCH_LOADERS=1 ----

def _collectors(profile):
    return {c["name"]: c for c in profile["collectors"]}


def _loader_next(profile):
    """The threads (by name) the DataLoader's __next__ ran on."""
    threads = {t["index"]: t["name"] for t in profile["threads"]}
    stage = next(s for s in profile["stages"] if s["name"].startswith("enumerate(DataLoader)"))
    return {threads.get(t["thread"], t["thread"]) for t in stage["by_thread"]}


@needs_torch
@pytest.mark.parametrize("depth", ["0", "2"])
def test_an_unmodified_dataloader_loop_runs_through_the_prefetcher(gnnprof_run, plain_run, depth):
    """GNNPROF_PREFETCH_LOADERS=1: the script's own `for` over a torch DataLoader runs through
    gnnprof.prefetch, the same batches in the same order (its checksums and loss unchanged):
    depth 2 pulls the loader on prefetch-0 while the loop waits in loader_wait; depth 0 runs the
    same code inline, the baseline. Early breaks leave no thread behind (the run exits)."""
    path = script("dataloader_loop.py")
    env = {"GNNPROF_PREFETCH_LOADERS": "1", "GNNPROF_PREFETCH": depth}
    for mode in ("own", "break"):
        r = gnnprof_run(path, "2", mode, env=env)
        assert r.rc == 0, r.err
        assert r.out == plain_run(path, "2", mode).out
    note = _collectors(r.profile)["prefetch-loaders"]
    assert note["enabled"] and f"runs through gnnprof.prefetch at depth {depth}" in note["reason"], note
    stages = {s["name"] for s in r.profile["stages"]}
    main = {t["name"] for t in r.profile["threads"] if t["index"] == r.profile["main_thread"]}
    if depth == "2":
        assert "loader_wait" in stages, stages
        assert _loader_next(r.profile) == {"prefetch-0"}, _loader_next(r.profile)
    else:
        assert "loader_wait" not in stages, stages
        assert _loader_next(r.profile) == main, (_loader_next(r.profile), main)


@needs_torch
def test_the_prefetchers_thread_traces_the_loaders_user_code_as_hidden(gnnprof_run):
    """Zero-code prefetch at depth 2: the collate_fn and the Dataset's __getitem__ run on
    prefetch-0, where the tracer follows them as it does in a DataLoader worker (before, their
    lines were gone from the prefetched run's table). Their time is off the loop's thread
    (off_loop_ns): the table says their Data is hidden. At depth 0 they run inline, on the loop's.
    `gnnprof compare` of the two says they moved off the loop's thread."""
    path = script("loader_loop.py")
    got, paths = {}, {}
    for depth in ("0", "2"):
        r = gnnprof_run(path, "30", env={"GNNPROF_PREFETCH_LOADERS": "1", "GNNPROF_PREFETCH": depth})
        paths[depth] = r.path
        assert r.rc == 0, r.err
        collate = r.lines("make_collate.<locals>.collate")
        gather = collate[line_of(path, "x = feats.index_select(")]
        assert 25 <= gather["hits"] <= 30, gather  # traced from the loop's first step (and those fetched ahead of it)
        got[depth] = gather.get("off_loop_ns", 0) / gather["total_ns"]
        assert r.lines("Seeds.__getitem__"), [l["function"] for l in r.profile["lines"]]
        text = subprocess.run([CLI, "report", r.path, "--lines"], capture_output=True, text=True).stdout
        hidden = "ran on threads other than the loop's (a prefetcher's producer" in text
        assert hidden == (depth == "2"), text
    assert got["0"] == 0 and got["2"] > 0.99, got
    # Compared, the collate_fn's lines moved off the loop's thread (not slower or faster there).
    text = subprocess.run([CLI, "compare", paths["0"], paths["2"]], capture_output=True, text=True).stdout
    rows = [l for l in text.splitlines() if "x = feats.index_select(" in l]
    assert len(rows) == 1 and "moved off the loop thread" in rows[0], text
    assert "make_collate.<locals>.collate() moved off the loop's thread (4 lines)" in text, text


@needs_torch
@pytest.mark.parametrize("mode", ["dgl", "subclass", "generator", "mixin"])
def test_zero_code_prefetch_wraps_a_dataloader_subclasss_own_iter(gnnprof_run, plain_run, mode):
    """A DataLoader subclass with an __iter__ of its own: DGL's (a library's, which wraps torch's
    iterator in its own) and the script's (returning super().__iter__(), a generator yielding
    from it, or a mixin's that is no DataLoader, whose other instances the script iterates too).
    The program's pass is the subclass's (its batches as it changes them: the output is the
    plain run's): one producer per epoch pulls it, torch's __next__ runs there; the subclass's
    call of torch's __iter__ is not a second pass, nor is the mixin's other class a loader."""
    path = script("dataloader_loop.py")
    libraries = os.path.join(os.path.dirname(path), "site-packages")
    env = {"GNNPROF_PREFETCH_LOADERS": "1", "GNNPROF_PREFETCH": "2", "PYTHONPATH": libraries}
    r = gnnprof_run(path, "2", mode, env=env)
    assert r.rc == 0, r.err
    assert r.out == plain_run(path, "2", mode, env={"PYTHONPATH": libraries}).out
    assert _collectors(r.profile)["prefetch-loaders"]["enabled"]
    assert "loader_wait" in {s["name"] for s in r.profile["stages"]}
    assert _loader_next(r.profile) == {"prefetch-0"}, _loader_next(r.profile)
    producers = [t for t in r.profile["threads"] if t["name"] == "prefetch-0"]
    assert len(producers) == 2, r.profile["threads"]


@needs_torch
def test_zero_code_prefetch_leaves_a_frameworks_pass_and_is_off_by_default(gnnprof_run, plain_run):
    """A pass a library makes over the loader (a framework's fetcher, which may read the
    iterator's internals) keeps the loader's iterator; without GNNPROF_PREFETCH_LOADERS nothing
    is wrapped."""
    path = script("dataloader_loop.py")
    libraries = os.path.join(os.path.dirname(path), "site-packages")
    r = gnnprof_run(path, "1", "library", env={"GNNPROF_PREFETCH_LOADERS": "1", "PYTHONPATH": libraries})
    assert r.rc == 0, r.err
    assert r.out == plain_run(path, "1", "library", env={"PYTHONPATH": libraries}).out
    assert "prefetch-loaders" not in _collectors(r.profile)
    assert "loader_wait" not in {s["name"] for s in r.profile["stages"]}
    off = gnnprof_run(path, "1", "own")
    assert off.rc == 0, off.err
    assert "prefetch-loaders" not in _collectors(off.profile)
    assert "loader_wait" not in {s["name"] for s in off.profile["stages"]}


@needs_torch
def test_ab_prefetches_an_unmodified_loop_over_its_own_generator(tmp_path, plain_run):
    """A loop pulling from the script's own batch generator has no DataLoader to wrap: ab's first
    baseline run finds the generator (the header's traced callee), and from then on both sides
    run each call of it through gnnprof.prefetch (GNNPROF_PREFETCH_GENERATORS, depth 0 and 2;
    the first run is redone), so the candidate waits on the prefetcher and the generator runs
    on its thread. The output stays the script's."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k in ("GNNPROF_ENABLED", "GNNPROF_PREFETCH", "GNNPROF_PREFETCH_LOADERS", "GNNPROF_PREFETCH_GENERATORS"):
        env.pop(k, None)
    src = script("numpy_sampler.py")
    out = tmp_path / "ab"
    proc = subprocess.run([CLI, "ab", "--repeat", "1", "-o", str(out), "--", PYTHON, src, "30", "gen"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    edit = "for seeds, nbrs in gnnprof.prefetch(batches(int(sys.argv[1]) if GEN else 0)):"
    n = line_of(src, "for seeds, nbrs in batches(")
    assert (f"the loop pulls its batches from batches() of numpy_sampler.py (numpy_sampler.py:{n}), no DataLoader: every "
            f"run wraps its calls in gnnprof.prefetch (depth 0 and 2) from now on, as `{edit}` would; baseline run 1 "
            f"again") in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.count("baseline run 1/1") == 2, proc.stderr[-2000:]
    assert "never waited on gnnprof's prefetcher" not in proc.stderr, proc.stderr[-1500:]
    expected = plain_run(src, "30", "gen").out
    for side, depth, thread in (("baseline", "0", "main"), ("candidate", "2", "prefetch-0")):
        with open(out / f"{side}-1.json") as f:
            p = json.load(f)
        note = _collectors(p).get("prefetch-generators", {}).get("reason", "")
        assert f"runs through gnnprof.prefetch at depth {depth}" in note, _collectors(p)
        gen = [l for l in p["lines"] if l["function"] == "batches"]
        assert gen, p["lines"]
        if side == "candidate":
            assert "loader_wait" in {s["name"] for s in p["stages"]}
            assert all(l.get("off_loop_ns", 0) >= 0.9 * l["total_ns"] for l in gen if l["total_ns"] > 0), gen
        with open(out / f"{side}-1.log") as f:
            assert expected in f.read(), side


@needs_torch
def test_ab_leaves_a_loop_through_gnnprofs_own_prefetcher_as_it_is(tmp_path):
    """The sample pulls its generator through gnnprof.prefetch itself (depth from
    GNNPROF_PREFETCH, 0: inline): ab's first run finds the collector `prefetch` and wraps
    nothing more, so the README's `gnnprof ab -- python3 sage_train.py` compares depth 0 and 2
    of the sample's own prefetcher, with one producer."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k in ("GNNPROF_ENABLED", "GNNPROF_PREFETCH", "GNNPROF_PREFETCH_LOADERS", "GNNPROF_PREFETCH_GENERATORS"):
        env.pop(k, None)
    sample = os.path.join(HERE, "..", "..", "samples", "python", "sage_train.py")
    out = tmp_path / "ab"
    proc = subprocess.run([CLI, "ab", "--repeat", "1", "-o", str(out), "--", PYTHON, sample, "--steps", "6"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "the loop pulls its batches from" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.count("baseline run 1/1") == 1, proc.stderr[-2000:]
    with open(out / "baseline-1.json") as f:
        p = json.load(f)
    assert "depth 0" in _collectors(p)["prefetch"]["reason"] and "prefetch-generators" not in _collectors(p)


@needs_torch
def test_ab_prefetches_an_unmodified_python_loop(tmp_path):
    """`gnnprof ab -- python3 train.py` on a script that never imports gnnprof: both sides run its
    DataLoader through the prefetcher (GNNPROF_PREFETCH_LOADERS=1), at depth 0 and 2, so the
    candidate waits in loader_wait and its loader runs on prefetch-0."""
    out = tmp_path / "ab"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k in ("GNNPROF_ENABLED", "GNNPROF_PREFETCH", "GNNPROF_PREFETCH_LOADERS"):
        env.pop(k, None)
    proc = subprocess.run([CLI, "ab", "--repeat", "1", "-o", str(out), "--", PYTHON, script("dataloader_loop.py"), "2"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "never waited on gnnprof's prefetcher" not in proc.stderr, proc.stderr[-1500:]
    assert re.search(r"^loader_wait +loop thread +0 ns .* candidate only", proc.stdout, re.M), proc.stdout[-3000:]
    for side, depth, thread in (("baseline", "0", "main"), ("candidate", "2", "prefetch-0")):
        with open(out / f"{side}-1.json") as f:
            profile = json.load(f)
        note = _collectors(profile)["prefetch-loaders"]
        assert f"at depth {depth}" in note["reason"], (side, note)
        main = {t["name"] for t in profile["threads"] if t["index"] == profile["main_thread"]}
        assert _loader_next(profile) == (main if thread == "main" else {thread}), (side, _loader_next(profile))


@needs_torch
def test_a_loop_built_to_lose_is_told_so(tmp_path):
    """The what-if on the baseline says prefetching will not pay (the loader's Python holds the
    GIL); the A/B does not call the candidate faster, and when it measures it slower it says so
    plainly with the stage that got slower.

    The runs are pinned to one CPU. On two, a producer thread can win without any overlap: this
    VM's two vCPUs can run at different speeds (docs/performance.md, at the top), and a loader
    moved to a thread on the faster one gets faster."""
    out = tmp_path / "ab"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("GNNPROF_ENABLED", None)
    one_cpu = min(os.sched_getaffinity(0))
    proc = subprocess.run([CLI, "ab", "--preload", "--repeat", "2", "-o", str(out), "--", PYTHON, script("lose_loop.py"),
                           "--steps", "30", "--draws", "64000"], capture_output=True, text=True, env=env, timeout=600,
                          preexec_fn=lambda: os.sched_setaffinity(0, {one_cpu}))
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = subprocess.run([CLI, "report", str(out / "baseline-1.json")], capture_output=True, text=True).stdout
    assert "Prefetching will not pay here" in report, report[report.find("What-if"):][:400]
    assert "the loader's own Python, which holds the GIL" in report, report[report.find("What-if"):][:400]
    # ... and what does help: worker processes, or fewer Python steps per sample.
    assert "DataLoader worker processes (num_workers > 0) run it beside the loop" in report, report[report.find("What-if"):][:600]
    verdict = re.search(r"verdict: (\w[\w ]*)", proc.stdout).group(1)
    assert verdict in ("slower", "no significant change"), proc.stdout[-1500:]
    if verdict == "slower":
        assert re.search(r"The candidate is SLOWER: .*the stage that got slower most: \S+", proc.stdout), proc.stdout[-800:]


@needs_torch
@pytest.mark.parametrize("workers", [0, 2])
def test_a_torch_dataloader_through_the_prefetcher(workers):
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(torch.arange(64, dtype=torch.float32).view(32, 2), torch.arange(32))
    plain = [tuple(t.clone() for t in b) for b in DataLoader(ds, batch_size=4, num_workers=workers)]
    got = list(gnnprof.prefetch(DataLoader(ds, batch_size=4, num_workers=workers), depth=2))
    assert len(got) == len(plain) == 8
    for (a, b), (c, d) in zip(plain, got):
        assert torch.equal(a, c) and torch.equal(b, d)


# ---- compute's threads while the producer runs (the core split) ----

class FakeTorch:
    """torch's thread setter on a fake machine: an iteration takes `ms[threads]`."""

    def __init__(self, threads=2):
        self.threads, self.calls = threads, []
        self.cuda = type("cuda", (), {"is_initialized": staticmethod(lambda: False)})

    def get_num_threads(self):
        return self.threads

    def set_num_threads(self, n):
        self.calls.append(n)
        self.threads = n


def run_split(monkeypatch, ms, mode=None, iterations=40, threads=2, on_gpu=False):
    if mode is None:
        monkeypatch.delenv("GNNPROF_PREFETCH_THREADS", raising=False)
    else:
        monkeypatch.setenv("GNNPROF_PREFETCH_THREADS", mode)
    torch = FakeTorch(threads)
    clock = [0]
    monkeypatch.setattr(_prefetch.time, "monotonic_ns", lambda: clock[0])
    split = _prefetch._CoreSplit(gnnprof, torch, on_gpu)
    for i in range(iterations):
        split.on_iteration(i == 0)
        clock[0] += int(ms[torch.threads] * 1e6)
    split.idle()
    return split, torch


needs_trial = pytest.mark.skipif(not gnnprof._state["bound"], reason="gnnprof's library is not loaded in this Python")


@needs_trial
def test_core_split_auto_keeps_the_split_where_the_machine_runs_it_faster(monkeypatch):
    split, torch = run_split(monkeypatch, {2: 39.0, 1: 28.6})
    assert torch.calls == [1, 2, 1, 2]  # trial blocks split, all, split; then the choice; idle at the end
    assert split.describe().startswith("1 compute thread, the producer on a core of its own: median iteration 28.6 ms "
                                       "against 39.0 ms with 2 compute threads (6 and 6"), split.describe()


@needs_trial
def test_core_split_auto_keeps_every_core_where_compute_scales(monkeypatch):
    split, torch = run_split(monkeypatch, {2: 30.0, 1: 36.0})
    assert torch.calls == [1, 2, 1, 2]
    assert split.threads == 2
    assert "2 compute threads, the producer thread in their gaps: median iteration 30.0 ms against 36.0 ms" \
        in split.describe()


def test_core_split_fixed_modes_one_core_and_a_gpu(monkeypatch):
    _, torch = run_split(monkeypatch, {2: 30.0, 1: 20.0}, mode="all")
    assert torch.calls == []
    split, torch = run_split(monkeypatch, {2: 30.0, 1: 40.0}, mode="split")
    assert torch.calls == [1, 2]
    assert "(GNNPROF_PREFETCH_THREADS=split)" in split.describe()
    split, torch = run_split(monkeypatch, {1: 30.0}, threads=1)
    assert torch.calls == [] and "no core to spare" in split.describe()
    split, torch = run_split(monkeypatch, {2: 30.0, 1: 20.0}, on_gpu=True)
    assert torch.calls == [] and "GPU" in split.describe()


@needs_torch
@pytest.mark.parametrize("mode", ["split", "all", "auto"])
def test_core_split_under_gnnprof_run(gnnprof_run, mode):
    r = gnnprof_run(script("prefetch_threads.py"), "2", env={"GNNPROF_PREFETCH_THREADS": mode})
    assert r.rc == 0, r.err
    during = {"split": "[1]", "all": "[2]", "auto": "[1, 2]"}[mode]
    assert f"epoch 0: during {during} after 2" in r.out, r.out
    assert "epoch 1: during [{}] after 2".format({"split": 1, "all": 2, "auto": r.out.split("epoch 1: during [")[1][0]}[mode]) in r.out
    if mode == "split":
        assert "in the broken pass 1" in r.out, r.out
    assert "after break 2" in r.out, r.out
    notes = [c["reason"] for c in r.profile["collectors"] if c["name"] == "prefetch-threads"]
    assert len(notes) == 1, r.profile["collectors"]
    want = {"split": "1 compute thread, the producer on a core of its own (GNNPROF_PREFETCH_THREADS=split)",
            "all": "2 compute threads, the producer thread in their gaps (GNNPROF_PREFETCH_THREADS=all)",
            "auto": "prefetched iterations measured)"}[mode]
    assert want in notes[0], notes
    counter = [c for c in r.profile["counters"] if c["name"] == "compute_threads"]
    assert counter and counter[0]["max"] == 2


@needs_torch
def test_the_baseline_keeps_its_threads(gnnprof_run):
    r = gnnprof_run(script("prefetch_threads.py"), "0", env={"GNNPROF_PREFETCH_THREADS": "split"})
    assert r.rc == 0, r.err
    assert "epoch 0: during [2] after 2" in r.out, r.out
    assert not [c for c in r.profile["collectors"] if c["name"] == "prefetch-threads"]


@needs_trial
def test_core_split_without_the_trial_in_an_older_library(monkeypatch):
    monkeypatch.setattr(gnnprof._native, "trial_new", lambda *a: None)
    split, torch = run_split(monkeypatch, {2: 30.0, 1: 20.0})
    assert torch.calls == []
    assert "no block trial" in split.describe()
