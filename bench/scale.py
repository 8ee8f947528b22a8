#!/usr/bin/env python3
"""Rendering at scale: a profile of 1M events and 100k iterations rendered to text, HTML and
Chrome trace; wall time and peak RSS of each (targets: < 5 s, < 1 GB; HTML < 5 MB).

usage: scale.py BUILD_DIR [ITERATIONS]
"""
import os
import resource
import subprocess
import sys
import tempfile
import time


def run(cmd, env=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.monotonic() - t0
    # ru_maxrss of children is the max over all children so far: run each in a fresh child
    # and report it only when it grew; a separate process per step keeps them apart.
    return dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before


def main():
    build = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    cli = os.path.join(build, "cli", "gnnprof")
    gen = os.path.join(build, "bench", "scale_gen")
    d = tempfile.mkdtemp(prefix="gnnprof-scale-")
    prof = os.path.join(d, "big.json")
    env = dict(os.environ, GNNPROF_BUFFER_EVENTS=str(1 << 21), GNNPROF_TIMELINE_EVENTS=str(10 * n))
    dt, _, _ = run([gen, str(n), prof], env)
    print(f"profile: {n} iterations, {10 * n} events, {os.path.getsize(prof) / 1e6:.1f} MB JSON (generated in {dt:.1f} s)")
    ok = True
    for name, extra in [("text", []), ("html", ["--html", os.path.join(d, "r.html")]),
                        ("trace", ["--trace", os.path.join(d, "r.trace.json")])]:
        # A fresh interpreter-free child per format: measure with /proc via a wrapper.
        t0 = time.monotonic()
        p = subprocess.Popen([cli, "report", prof] + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.monotonic() - t0
        rss_mb = ru.ru_maxrss / 1024
        size = ""
        if name != "text":
            out = extra[1]
            size = f", output {os.path.getsize(out) / 1e6:.2f} MB"
            if name == "html" and os.path.getsize(out) >= 5e6:
                ok = False
        good = status == 0 and dt < 5 and rss_mb < 1024
        ok &= good
        print(f"{name:<6} {dt:6.2f} s  peak RSS {rss_mb:7.1f} MB{size}  {'ok' if good else 'OVER TARGET'}")
    print("targets:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
