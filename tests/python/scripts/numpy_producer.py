"""A training loop fed by a producer of the program's own that samples neighbours and gathers
their features with numpy alone (no torch op until the loop's torch.from_numpy): a thread and a
queue.Queue (`thread`), a ThreadPoolExecutor (`pool`), a process and a multiprocessing.Queue
(`process`; `simple-queue`: a multiprocessing.SimpleQueue), a multiprocessing.Pool's imap, the pool ended by its `with` (terminate: SIGTERM to
its worker) (`mp-pool`), or a ProcessPoolExecutor (`process-pool`); or the map of a
ThreadPoolExecutor or a ProcessPoolExecutor, which submits every batch before the loop's first
step (`pool-map`, `process-pool-map`); or a thread started for the next batch while this one
trains, then joined (`thread-join`); or a process and a one-way `multiprocessing.Pipe`
(`pipe`). Plain PyTorch, no gnnprof import; the producer makes no
torch gather for the tracer to find it by.

usage: numpy_producer.py STEPS [thread|pool|process|simple-queue|mp-pool|process-pool|pool-map|process-pool-map|
                                 thread-join|pipe] [fork|spawn]"""
import multiprocessing as mp
import queue
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import torch
import torch.nn.functional as F

N, D, FANOUT, BATCH = 20000, 64, 10, 512
START = sys.argv[3] if len(sys.argv) > 3 else "fork"  # the processes' start method
_rng = np.random.default_rng(0)
FEATS = _rng.standard_normal((N, D), dtype=np.float32)
NBRS = _rng.integers(0, N, (N, FANOUT))
LABELS = _rng.integers(0, 5, N)


def sample_batch(rng):
    seeds = rng.integers(0, N, BATCH)
    hop2 = NBRS[NBRS[seeds].reshape(-1)].reshape(-1)
    uniq, inv = np.unique(hop2, return_inverse=True)
    x = FEATS[uniq][inv].reshape(BATCH, FANOUT * FANOUT, D).mean(1)
    return x, LABELS[seeds]


def seeded_batch(seed):
    return sample_batch(np.random.default_rng(seed))


def load_into(seed, out):
    out["batch"] = seeded_batch(seed)


def pipe_producer(conn, steps, seed):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        conn.send(sample_batch(rng))
    conn.send(None)


def producer(q, steps, seed):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x, y = sample_batch(rng)
        q.put((x, y))
    q.put(None)


def batches(steps, mode):
    if mode == "pool":
        rng = np.random.default_rng(1)
        with ThreadPoolExecutor(max_workers=1) as pool:
            futures = [pool.submit(sample_batch, rng)]
            for step in range(steps):
                if step + 1 < steps:
                    futures.append(pool.submit(sample_batch, rng))
                yield futures[step].result()
        return
    if mode == "thread-join":
        nxt = {}
        loader = threading.Thread(target=load_into, args=(0, nxt))
        loader.start()
        for step in range(steps):
            loader.join()
            cur, nxt = nxt, {}
            if step + 1 < steps:
                loader = threading.Thread(target=load_into, args=(step + 1, nxt))
                loader.start()
            yield cur["batch"]
        return
    if mode == "pipe":
        ctx = mp.get_context(START)
        receiver, sender = ctx.Pipe(duplex=False)
        worker = ctx.Process(target=pipe_producer, args=(sender, steps, 1), daemon=True)
        worker.start()
        while (item := receiver.recv()) is not None:
            yield item
        worker.join()
        return
    if mode == "pool-map":
        with ThreadPoolExecutor(max_workers=1) as pool:
            yield from pool.map(seeded_batch, range(steps))
        return
    if mode == "process-pool-map":
        with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context(START)) as pool:
            yield from pool.map(seeded_batch, range(steps))
        return
    if mode == "mp-pool":
        with mp.get_context(START).Pool(1) as pool:
            yield from pool.imap(seeded_batch, range(steps))
        return
    if mode == "process-pool":
        with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context(START)) as pool:
            futures = [pool.submit(seeded_batch, s) for s in range(min(2, steps))]
            for step in range(steps):
                if step + 2 < steps:
                    futures.append(pool.submit(seeded_batch, step + 2))
                yield futures[step].result()
        return
    if mode in ("process", "simple-queue"):
        ctx = mp.get_context(START)
        q = ctx.Queue(maxsize=4) if mode == "process" else ctx.SimpleQueue()
        worker = ctx.Process(target=producer, args=(q, steps, 1), daemon=True)
    else:
        q = queue.Queue(maxsize=4)
        worker = threading.Thread(target=producer, args=(q, steps, 1), daemon=True)
    worker.start()
    while (item := q.get()) is not None:
        yield item
    worker.join()


def main(steps, mode):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(D, 128), torch.nn.ReLU(), torch.nn.Linear(128, 5))
    opt = torch.optim.Adam(model.parameters())
    n = 0
    for x, y in batches(steps, mode):
        loss = F.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += 1
    print("steps", n)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "thread")
