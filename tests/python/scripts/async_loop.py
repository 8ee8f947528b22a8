"""A training loop that is a coroutine: each batch comes from a task created one step ahead
(asyncio.create_task), which waits on a feature store's latency (asyncio.sleep) and gathers
with numpy. Modes: io (as written), early (an `await asyncio.sleep(0)` after create_task: the
task starts its wait before the step), cpu (no latency: the task's gather is all its time),
direct (no task: the loop awaits the fetch of a slice of a torch permutation, an op on the
awaiting line before it suspends), torch (the task encodes its batch with torch ops under
no_grad, and the loop yields to the event loop once between its forward and backward),
executor (the batch made on the event loop's default thread pool, loop.run_in_executor, a
function that sleeps and gathers)."""
import asyncio
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

N, D, FANOUT, BATCH = 20000, 64, 10, 512
_rng = np.random.default_rng(0)
FEATS = _rng.standard_normal((N, D), dtype=np.float32)
NBRS = _rng.integers(0, N, (N, FANOUT))
LABELS = _rng.integers(0, 5, N)
MODE = sys.argv[2] if len(sys.argv) > 2 else "io"
torch.manual_seed(1)
ENCODER = torch.nn.Linear(D, D)


async def fetch(seed):
    if MODE != "cpu":
        await asyncio.sleep(0.004)  # the feature store's latency
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, N, BATCH * (4 if MODE == "cpu" else 1))
    x = FEATS[NBRS[seeds].reshape(-1)].reshape(len(seeds), FANOUT, D).mean(1)
    if MODE == "torch":
        with torch.no_grad():
            x = ENCODER(torch.from_numpy(x)).numpy()
    return x[:BATCH], LABELS[seeds[:BATCH]]


def fetch_sync(seed):
    time.sleep(0.004)  # the feature store's latency
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, N, BATCH)
    x = FEATS[NBRS[seeds].reshape(-1)].reshape(BATCH, FANOUT, D).mean(1)
    return x, LABELS[seeds]


def start(seed):
    """The next batch's task, or its executor future."""
    if MODE == "executor":
        return asyncio.get_running_loop().run_in_executor(None, fetch_sync, seed)
    return asyncio.create_task(fetch(seed))


async def fetch_ids(ids):
    ids = ids.numpy()
    await asyncio.sleep(0.004)
    x = FEATS[NBRS[ids].reshape(-1)].reshape(len(ids), FANOUT, D).mean(1)
    return x, LABELS[ids]


async def main(steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(D, 128), torch.nn.ReLU(), torch.nn.Linear(128, 5))
    opt = torch.optim.Adam(model.parameters())
    perm = torch.randperm(N, generator=torch.Generator().manual_seed(0))
    task = start(0) if MODE != "direct" else None
    for step in range(steps):
        if MODE == "direct":
            x, y = await fetch_ids(perm[step * BATCH:(step + 1) * BATCH])
        else:
            x, y = await task
        if step + 1 < steps and MODE != "direct":
            task = start(step + 1)
            if MODE == "early":
                await asyncio.sleep(0)
        loss = F.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        if MODE == "torch":
            await asyncio.sleep(0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"loss {loss.item():.4f}")


asyncio.run(main(int(sys.argv[1])))
