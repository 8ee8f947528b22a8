"""The in-process measurement the hook benches share (bench/memmap_reads.py,
bench/loader_fetch.py): a method gnnprof wraps, timed through its wrapper and through the
original the wrapper keeps (`__wrapped__`), in blocks whose order alternates round to round."""
import os
import statistics
import subprocess
import sys
import time


def wrapped(method, what):
    """(the hook, the original it wraps); exits naming `what` when `method` is not gnnprof's."""
    raw = getattr(method, "__wrapped__", None)
    if raw is None or not getattr(method, "_gnnprof", False):
        sys.exit(f"{what} is not gnnprof's: run under gnnprof run")
    return method, raw


def alternate(hooked, original, call, rounds, n):
    """call(fn, i) for i in range(n), fn the hook and then the original (or the other way round,
    every other round), `rounds` times. Returns (original, hooked, q1, q3): the median time a call
    of each, and the quartiles of the rounds' differences (hooked - original), in seconds."""
    got = {"hooked": [], "original": []}
    for r in range(rounds):
        for which, fn in (("hooked", hooked), ("original", original)) if r % 2 else (("original", original), ("hooked", hooked)):
            t = time.perf_counter()
            for i in range(n):
                call(fn, i)
            got[which].append((time.perf_counter() - t) / n)
    diffs = sorted(a - b for a, b in zip(got["hooked"], got["original"]))
    return (statistics.median(got["original"]), statistics.median(got["hooked"]), diffs[len(diffs) // 4],
            diffs[3 * len(diffs) // 4])


def under_gnnprof(gnnprof, script, args, out_dir, lines="none"):
    """Runs `script ARGS` under `gnnprof run --lines none` (the package and its hooks in, no
    tracer; `lines` another selection, or a list of them), its profile in out_dir; passes its
    stdout on (and its stderr where it failed) and returns its exit code."""
    cmd = [gnnprof, "run"]
    for spec in [lines] if isinstance(lines, str) else lines:
        cmd += ["--lines", spec]
    cmd += ["-o", os.path.join(out_dir, "p.json"), "--", sys.executable, os.path.abspath(script), *args]
    out = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(out.stdout)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
    return out.returncode
