"""A training loop that is a coroutine, without torch: gnnprof._native.optimizer_step() stands
where torch's observer reports Optimizer.step. Each batch comes from a task created one step
ahead, which sleeps 5 ms (a feature store's latency) and builds the batch; with "stream", the
loop pulls its batches from an async generator that does the same (`async for`). Runs under
`gnnprof run` on any CPython with a tracer."""
import asyncio
import sys

from gnnprof import _native


async def fetch(i):
    await asyncio.sleep(0.005)
    batch = [i] * 100
    return batch


async def train(steps):
    total = 0
    task = asyncio.create_task(fetch(0))
    for step in range(steps):
        x = await task
        if step + 1 < steps:
            task = asyncio.create_task(fetch(step + 1))
        total += sum(x)
        _native.optimizer_step()
    print("total", total)


async def stream(steps):
    for i in range(steps):
        await asyncio.sleep(0.005)
        batch = [i] * 100
        yield batch


async def train_stream(steps):
    total = 0
    async for x in stream(steps):
        total += sum(x)
        _native.optimizer_step()
    print("total", total)


loop = train_stream if sys.argv[2:] == ["stream"] else train
asyncio.run(loop(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
