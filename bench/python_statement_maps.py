#!/usr/bin/python3
"""Statement maps: the source scan gnnprof uses against an `ast` walk, timed interleaved on the
same inputs; the first map is built on the loop thread at the first optimizer step.

    bench/python_statement_maps.py [--rounds 30]

Rows: the sample's training loop function (`main` of samples/python/sage_train.py) scanned alone;
its whole file; every module of the standard library's top directory (the total)."""
import argparse
import glob
import importlib.util
import linecache
import os
import statistics
import sys
import time
import types

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
spec = importlib.util.spec_from_file_location("_lines", os.path.join(root, "python/gnnprof/_lines.py"))
_lines = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_lines)  # the module alone: no package import, no session
sys.path.insert(0, here)
from python_lines import interleave  # noqa: E402  (rounds alternating the order of the modes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    sample = os.path.join(root, "samples/python/sage_train.py")
    lines = linecache.getlines(sample)
    code = compile("".join(lines), sample, "exec")
    loop = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == "main")
    first = loop.co_firstlineno
    last = max(ln for _, _, ln in loop.co_lines() if ln is not None)
    seg = lines[first - 1:last]
    stdlib = [linecache.getlines(p) for p in sorted(glob.glob(os.path.dirname(os.__file__) + "/*.py"))]
    cases = {
        f"sample's loop function ({last - first + 1} lines)": (
            lambda: _lines._function_map(sample, lines, first, last),
            lambda: _lines._ast_map(seg, sample)),  # ast.parse of the def alone (not indented)
        f"sample's file ({len(lines)} lines)": (lambda: _lines._scan_map(lines), lambda: _lines._ast_map(lines, sample)),
        f"standard library, {len(stdlib)} modules": (lambda: [_lines._scan_map(l) for l in stdlib],
                                                     lambda: [_lines._ast_map(l, "x") for l in stdlib]),
    }
    print(f"{'input':44} {'scan (median)':>14} {'ast (median)':>14} {'ast / scan':>11}")
    for name, (scan, ref) in cases.items():
        fns = {"scan": scan, "ast": ref}

        def one(m, r):
            t0 = time.perf_counter()
            fns[m]()
            return time.perf_counter() - t0

        t = interleave(list(fns), a.rounds, one)
        s, x = statistics.median(t["scan"]), statistics.median(t["ast"])
        print(f"{name:44} {s * 1e3:11.2f} ms {x * 1e3:11.2f} ms {x / s:10.1f}x")


if __name__ == "__main__":
    main()
