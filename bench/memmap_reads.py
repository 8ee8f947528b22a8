#!/usr/bin/python3
"""What gnnprof's numpy.memmap hook (python/gnnprof/_numpy_hooks.py) costs per read
(docs/performance.md, "Reads from a numpy memmap"). Under `gnnprof run --lines none` (the
package and its hook in, no tracer), one process reads a 64 MiB float16 memmap through the
hooked `numpy.memmap.__getitem__` and through the original it wraps (`__wrapped__`), in
alternating blocks over ROUNDS rounds: a row (`mm[i]`, a view: only the hook's checks) and a
gather of 640 random rows (`mm[ids]`: recorded as a materialization, in a stage). Every page
is resident first, so the figures are the hook's cost, not the disk's. Prints the median per
read of each, and the difference.

    /usr/bin/python3 bench/memmap_reads.py --gnnprof build/cli/gnnprof --rounds 20
"""
import argparse
import os
import sys
import tempfile

ROWS, COLS = 1 << 18, 128  # 64 MiB of float16


def child(path, rounds):
    import numpy as np
    from hook_blocks import alternate, wrapped
    hooked, raw = wrapped(np.memmap.__getitem__, "numpy.memmap.__getitem__")
    mm = np.load(path, mmap_mode="r")
    np.asarray(mm).sum(dtype=np.float64)
    rng = np.random.default_rng(0)
    ids = [rng.integers(0, ROWS, 640) for _ in range(64)]
    cases = {"row mm[i] (view)": (lambda i: i & (ROWS - 1), 20000),
             "gather mm[ids], 640 rows": (lambda i: ids[i & 63], 500)}
    for name, (index, n) in cases.items():
        o, h, q1, q3 = alternate(hooked, raw, lambda f, i: f(mm, index(i)), rounds, n)
        print(f"{name:26} original {o * 1e9:8.0f} ns  hooked {h * 1e9:8.0f} ns  difference {(h - o) * 1e9:+6.0f} ns "
              f"({100 * (h / o - 1):+.1f} %; round differences {q1 * 1e9:+.0f}..{q3 * 1e9:+.0f} ns, quartiles)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gnnprof", default="build/cli/gnnprof")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--child", nargs=2)
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], int(a.child[1]))
    import numpy as np
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "feats.npy")
        mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(ROWS, COLS))
        mm[:] = 1
        mm.flush()
        del mm
        from hook_blocks import under_gnnprof
        return under_gnnprof(a.gnnprof, __file__, ["--child", path, str(a.rounds)], d)


if __name__ == "__main__":
    sys.exit(main())
