#!/usr/bin/python3
"""What `gnnprof run` (lines auto) costs the Python GNN sample's loop, measured inside one process
with blocks of steps interleaved, so that the 2-core VM's process-to-process spread (+-4 % from
one run of the same command to the next) cancels out:

    off        torch's RecordFunction off for the loop's thread and the frame hook out: the
               observer sees nothing, no line is traced, no iteration is marked (plain torch)
    observer   RecordFunction on, hook out: the op observer, iteration marks, drains, flushes
    gnnprof    RecordFunction on, hook in: the above plus the line tracer with its default
               selection (this file's `loop` calls the optimizer's step; `batches` is the
               generator it pulls from)

    bench/python_sample_inproc.py --gnnprof build/cli/gnnprof [--rounds 40] [--control]

What it cannot see: costs paid once (imports, the first statement maps) and what the injected
library changes by being there (bench/python_lines.py's process-level `sample` measures those).
"""
import argparse, os, statistics, subprocess, sys, tempfile, time

import python_inproc_overhead


def batches(st, args, data, gen):
    """The loop's data pipeline: a user generator, as in the sample."""
    step = 0
    while True:
        yield st.make_batch(step, args, *data, gen)
        step += 1


def loop(it, model, opt, F, steps):
    """The training loop gnnprof's auto selection traces (it calls the optimizer's step)."""
    for _ in range(steps):
        mfgs = next(it)
        x = mfgs[0].srcdata["x"]
        y = mfgs[-1].dstdata["y"]
        loss = F.cross_entropy(model(mfgs, x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def child(rounds, block_s, control):
    import torch
    import torch.nn.functional as F
    from gnnprof import _native
    torch.set_num_threads(1)
    torch.manual_seed(0)
    st, args, data, model, opt = python_inproc_overhead.sage_setup()
    data = data + (torch.device("cpu"),)
    it = batches(st, args, data, torch.Generator().manual_seed(args.seed + 1))
    enable = torch._C._autograd._enable_record_function
    modes = {"off": (False, False), "observer": (True, False), "gnnprof": (True, True)}
    if control:  # a second `off` mode: its ratio to off is these blocks' noise floor (A/A)
        modes["off (A/A)"] = (False, False)

    def block(mode, steps):
        rf, hook = modes[mode]
        enable(rf)
        _native.set_hook(hook)
        t0 = time.perf_counter()
        loop(it, model, opt, F, steps)
        return time.perf_counter() - t0

    block("gnnprof", 6)  # the first optimizer step selects `loop`; warm-up
    t = block("off", 5) / 5
    steps = max(3, int(block_s / t))
    order = list(modes)
    times = python_inproc_overhead.interleaved_blocks(order, rounds, lambda m: block(m, steps) / steps)
    enable(True)
    _native.set_hook(True)
    stats = _native.stats()
    if stats["line_events"] == 0 or not stats["auto"]:
        sys.exit(f"python_sample_inproc.py: no line traced ({stats}); is this under `gnnprof run` with lines auto?")
    print(f"Python GNN sample's loop, in one process under `gnnprof run`: {rounds} rounds x {steps} steps per "
          f"mode, order alternating; off {1e3 * statistics.median(times['off']):.2f} ms/step; "
          f"{stats['line_events']} line events, {stats['selected']} code objects traced")
    python_inproc_overhead.print_ratios(times, order, 9)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gnnprof", help="the gnnprof CLI (the parent re-runs this file under `gnnprof run`)")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--block-s", type=float, default=0.3, help="seconds per block")
    ap.add_argument("--control", action="store_true", help="also a second `off` mode (A/A), the noise floor")
    a = ap.parse_args()
    if os.environ.get("GNNPROF_INPROC_CHILD") == "1":
        child(a.rounds, a.block_s, a.control)
        return
    if not a.gnnprof:
        ap.error("--gnnprof PATH is required")
    env = dict(os.environ, GNNPROF_INPROC_CHILD="1", GNNPROF_QUIET="1",
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(subprocess.call([a.gnnprof, "run", "-o", os.path.join(tmp, "p.json"), "--", sys.executable,
                                  os.path.abspath(__file__), "--rounds", str(a.rounds), "--block-s", str(a.block_s)]
                                 + (["--control"] if a.control else []), env=env))


if __name__ == "__main__":
    main()
