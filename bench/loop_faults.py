#!/usr/bin/python3
"""Minor page faults of the GNN sample's loop thread, plain and under gnnprof (docs/performance.md,
"Whose page faults?").

About 800 of the loop's faults are the memory-mapped feature file's pages; the rest are mostly
the host's heap growing, a tensor that did not fit in freed memory (perf record -e minor-faults
-d attributes them). How often that happens depends on how the host's allocations interleave,
so a few hundred small long-lived blocks of gnnprof's in the wrong places show up here as
thousands of faults.
Runs the modes interleaved, ROUNDS times, and prints each mode's counts sorted and their median.

    /usr/bin/python3 bench/loop_faults.py --preload build/lib/libgnnprof_preload.so --rounds 8

--against OTHER.so adds a mode with another build's preload (an A/B of a change); --burst N
also counts, per mode, the runs with more than N faults (a heap-growth burst: with 3 steps a
plain run takes ~880 faults, one whose heap grew ~4 000).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--threadless", action="store_true", help="also the threadless mode (GNNPROF_THREADLESS=1)")
    ap.add_argument("--against", help="also a mode with this other libgnnprof_preload.so")
    ap.add_argument("--burst", type=int, help="also count the runs with more than this many faults")
    a = ap.parse_args()
    preload = os.path.realpath(a.preload)
    if not os.path.isfile(preload):
        sys.exit(f"loop_faults.py: {preload}: no such file")
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    cmd = ["/usr/bin/python3", os.path.join(root, "samples/python/sage_train.py"), "--steps", str(a.steps)]
    with tempfile.TemporaryDirectory() as tmp:  # the profiles are not kept
        gn = {"LD_PRELOAD": preload, "GNNPROF_QUIET": "1", "GNNPROF_OUTPUT": os.path.join(tmp, "p.json")}
        modes = {"plain": {}, "gnnprof": gn}
        if a.threadless:
            modes["gnnprof, threadless"] = dict(gn, GNNPROF_THREADLESS="1")
        if a.against:
            modes["gnnprof (--against)"] = dict(gn, LD_PRELOAD=os.path.realpath(a.against))
        faults = {m: [] for m in modes}
        base = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        for r in range(a.rounds):
            order = list(modes) if r % 2 == 0 else list(reversed(list(modes)))
            for m in order:
                out = subprocess.run(cmd, env=dict(base, **modes[m]), capture_output=True, text=True, check=True).stdout
                got = re.search(r"(\d+) minor page faults", out)
                if got is None:
                    sys.exit("loop_faults.py: no fault count in the sample's output:\n" + out)
                faults[m].append(int(got.group(1)))
            print(f"round {r + 1}/{a.rounds}", file=sys.stderr, flush=True)
    print(f"Loop thread's minor page faults, GNN sample, {a.steps} steps, {a.rounds} interleaved rounds, "
          f"OMP_NUM_THREADS={base['OMP_NUM_THREADS']}:")
    for m, v in faults.items():
        bursts = f"   runs over {a.burst}: {sum(x > a.burst for x in v)} of {len(v)}" if a.burst else ""
        print(f"  {m:22s} median {statistics.median(v):7.0f}{bursts}   sorted {' '.join(str(x) for x in sorted(v))}")


if __name__ == "__main__":
    main()
