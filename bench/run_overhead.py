#!/usr/bin/env python3
"""Runs bench_overhead with interleaved repetitions and prints the figures of
docs/performance.md: ns per stage enter+exit and per line hit, and the overhead ratio of
one GNNPROF_STAGE around 5 us of real work (medians of interleaved repetitions).

usage: run_overhead.py BENCH_BINARY [--repetitions N] [--json OUT]
"""
import argparse
import json
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--json", default=None, help="also save Google Benchmark's JSON here")
    a = ap.parse_args()
    cmd = [a.binary, "--benchmark_format=json", f"--benchmark_repetitions={a.repetitions}",
           "--benchmark_enable_random_interleaving=true", "--benchmark_report_aggregates_only=false"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    data = json.loads(out)
    if a.json:
        with open(a.json, "w") as f:
            f.write(out)
    runs, counters = {}, {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6}[b["time_unit"]]
        runs.setdefault(b["run_name"], []).append(b["real_time"] * scale)
        for k in ("dropped", "added_ns_per_iter", "body_ns", "overhead_pct"):
            if k in b:
                counters.setdefault(b["run_name"], {}).setdefault(k, []).append(b[k])
    med = {k: statistics.median(v) for k, v in runs.items()}
    ctx = data["context"]
    print(f"host: {ctx.get('host_name')}  cpus: {ctx.get('num_cpus')} @ {ctx.get('mhz_per_cpu')} MHz  "
          f"repetitions: {a.repetitions} (random interleaving)")
    print(f"{'benchmark':<36}{'median ns':>12}{'min ns':>12}{'max ns':>12}{'dropped':>9}")
    for k in sorted(med):
        dropped = max(counters.get(k, {}).get("dropped", [0]))
        print(f"{k:<36}{med[k]:>12.2f}{min(runs[k]):>12.2f}{max(runs[k]):>12.2f}{int(dropped):>9}")
    empty = med.get("BM_EmptyLoop", 0.0)
    stage = med["BM_StageEnterExit"] - empty
    line = med["BM_LineHit"] - empty
    disabled = med["BM_StageDisabled"] - empty
    abba = next(v for k, v in counters.items() if k.startswith("BM_Overhead5usABBA"))
    added = statistics.median(abba["added_ns_per_iter"])
    body = statistics.median(abba["body_ns"])
    pct = 100.0 * added / body
    print()
    print(f"stage enter+exit:   {stage:.2f} ns (target <= 25)")
    print(f"line hit:           {line:.2f} ns (target <= 25)")
    print(f"stage, no session:  {disabled:.2f} ns")
    if "BM_RawRdtsc" in med:
        print(f"one rdtsc:          {med['BM_RawRdtsc']:.2f} ns (a stage reads it twice: floor {2 * med['BM_RawRdtsc']:.2f} ns)")
    print(f"5 us loop body:     body {body:.0f} ns, +{added:.2f} ns per iteration = {pct:.3f} % "
          f"(target <= 0.5 %); per-run values {', '.join(f'{100 * x / y:.3f}' for x, y in zip(abba['added_ns_per_iter'], abba['body_ns']))} %")
    all_dropped = [d for c in counters.values() for d in c.get("dropped", [])]
    ok = stage <= 25 and line <= 25 and pct <= 0.5 and all(d == 0 for d in all_dropped)
    print("targets:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
