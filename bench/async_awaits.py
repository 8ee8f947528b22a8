#!/usr/bin/python3
"""What the line tracer costs a training loop that is a coroutine, per await (docs/performance.md,
"A training loop that is a coroutine").

Under `gnnprof run --lines auto --lines bench/async_awaits.py:plain_block`, two identical
coroutines of four lines an iteration, one `await asyncio.sleep(0)` (a round trip through the
event loop) among them: loop_block is found as the training loop (the test trigger of auto
selection, gnnprof._native.optimizer_step), so each of its suspensions is the stage "await"
with its off-CPU counter; plain_block is traced explicitly, its awaits kept on their line but no
stage. Blocks of iterations alternate, the order rotating round to round, between: the frame
hook out (nothing traced), plain_block traced, loop_block traced. Prints the median iteration
of each and the differences: traced less untraced (four line events and a suspension kept on
its line), and the loop's less the plain one's (the stage, its clocks and counter).

`--torch`: torch imported and an op run first, so that the torch observer runs: the stage is
then its scope, and the observer times its off-CPU time at every await.

    /usr/bin/python3 bench/async_awaits.py --gnnprof build/cli/gnnprof --rounds 20 [--torch]
"""
import argparse
import asyncio
import statistics
import sys
import tempfile
import time

import hook_blocks

ITERATIONS = 5000


async def loop_block(n, step=None):
    x = 0
    for _ in range(n):
        await asyncio.sleep(0)
        x += 1
        if step is not None:
            step()  # inside its loop: this coroutine alone is the training loop
    return x


async def plain_block(n, step=None):
    x = 0
    for _ in range(n):
        await asyncio.sleep(0)
        x += 1
        if step is not None:
            step()
    return x


async def child(rounds, with_torch):
    from gnnprof import _native
    if with_torch:
        import torch
        torch.ones(2).sum()  # the observer's state for this thread
    await loop_block(10, _native.optimizer_step)
    kinds = ("off", "plain", "loop")
    got = {k: [] for k in kinds}
    for r in range(rounds):
        for k in kinds[r % 3:] + kinds[:r % 3]:
            _native.set_hook(k != "off")
            block = plain_block if k == "plain" else loop_block
            t = time.perf_counter()
            await block(ITERATIONS)
            got[k].append((time.perf_counter() - t) / ITERATIONS)
    _native.set_hook(True)
    med = {k: statistics.median(v) for k, v in got.items()}

    def diff(a, b):
        d = sorted(x - y for x, y in zip(got[a], got[b]))
        return f"{(med[a] - med[b]) * 1e9:+.0f} ns (quartiles of the rounds {d[len(d) // 4] * 1e9:+.0f}..{d[3 * len(d) // 4] * 1e9:+.0f})"

    print(f"iteration (an await of asyncio.sleep(0) and three lines), {rounds} rounds of {ITERATIONS}"
          f"{', the torch observer running' if with_torch else ''}:")
    print(f"  untraced {med['off'] * 1e6:.2f} us  traced {med['plain'] * 1e6:.2f} us  "
          f"traced as the training loop {med['loop'] * 1e6:.2f} us")
    print(f"  traced less untraced: {diff('plain', 'off')}")
    print(f"  the loop's await stage (loop less plain): {diff('loop', 'plain')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gnnprof", default="build/cli/gnnprof")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--torch", action="store_true", help="the torch observer running (the stage its scope)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        asyncio.run(child(a.rounds, a.torch))
        return 0
    with tempfile.TemporaryDirectory() as d:
        return hook_blocks.under_gnnprof(a.gnnprof, __file__, ["--child", "--rounds", str(a.rounds)] + ["--torch"] * a.torch,
                                         d, lines=["auto", __file__ + ":plain_block"])


if __name__ == "__main__":
    sys.exit(main())
