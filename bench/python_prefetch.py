#!/usr/bin/python3
"""The Python sample, baseline (gnnprof.prefetch depth 0: inline) vs prefetched (depth 2), run
by `gnnprof ab --preload` interleaved, and what the baseline's profile predicted:

    bench/python_prefetch.py --gnnprof build/cli/gnnprof [--repeat 5] [--steps 40]

Prints, per side (medians over the runs' analyzed iterations): iteration time; from the
baseline, exposed data D and compute C, the overlap bound max(D, C) + R and the expectation
within the machine's limits; from the candidate, the share of D now hidden (on the producer)
and the data time the producer took; and the measured speedup with its interval (ab's
bootstrap). Figures go to docs/performance.md."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)


def analysis(gnnprof, profile):
    text = subprocess.run([gnnprof, "report", profile], capture_output=True, text=True).stdout
    m = {}
    m["iteration"] = re.search(r"iterations analyzed .*?; median ([^,]+),", text).group(1)
    m["exposed"], m["hidden"] = re.search(r"Data time exposed \(loop waited\): (.+?) per iteration .*; hidden \(other threads\): (.+)", text).groups()
    m["compute"], m["rest"] = re.search(r"Compute: (.+?); the rest .*: (.+)", text).groups()
    m["overlap"], m["overlap_x"] = re.search(r"max\(data, compute\) \+ rest = (.+?) per iteration, ([0-9.]+)x", text).groups()
    m["expected"] = re.search(r"(Within this machine's limits|Prefetching will not pay here): (.*)", text).group(0)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gnnprof", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    gnnprof = os.path.abspath(a.gnnprof)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ab")
        p = subprocess.run([gnnprof, "ab", "--preload", "--repeat", str(a.repeat), "-o", out, "--", "/usr/bin/python3",
                            os.path.join(root, "samples/python/sage_train.py"), "--steps", str(a.steps)],
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(p.stderr[-3000:])
        head = re.search(r"Headline: .*", p.stdout).group(0)
        print(f"Python sample, {a.steps} steps, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(torch default)')}, "
              f"{a.repeat} runs per side interleaved (gnnprof ab --preload; GNNPROF_PREFETCH=0 vs 2)")
        print("  " + head)
        for line in p.stdout.splitlines():
            if re.match(r"(iteration|loader_wait|sample|materialize|load|forward|backward|optimizer)\s", line):
                print("  " + line)
        for side in ("baseline", "candidate"):
            print(f"  {side} run 1's report:")
            for k, v in analysis(gnnprof, os.path.join(out, f"{side}-1.json")).items():
                print(f"    {k}: {v}")
        c = json.load(open(os.path.join(out, "comparison.json")))
        hidden = sum(m["candidate_median_ns"] for m in c["metrics"] if m["scope"] == "other_threads")
        print(f"  candidate: data stages on other threads, per-iteration medians summed: {hidden / 1e6:.1f} ms")


if __name__ == "__main__":
    main()
