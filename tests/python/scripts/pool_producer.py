"""A training loop fed by producers of the program's own, as hand-written GNN pipelines do: a
ThreadPoolExecutor samples neighbours and gathers their features `AHEAD` batches ahead, and the
loop takes each with `futures[step].result()`; or sampler processes and a multiprocessing.Queue
(`process`). Each batch also waits SLEEP_MS in the producer (storage, a remote feature store).
One producer with a long sleep cannot keep up; `WORKERS` producers with as many batches in
flight can. Plain PyTorch, no gnnprof import. A batch whose seed is 13 fails in the producer
(`raise`): its exception reaches the loop through result(), which skips it.

usage: pool_producer.py STEPS WORKERS SLEEP_MS [process] [raise]"""
import multiprocessing as mp
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F

N, D, FANOUT, BATCH = 20000, 64, 10, 1024


def sample(graph, seeds, sleep_ms, fail):
    feats, nbrs, labels = graph
    if fail and int(seeds[0]) == 13:
        raise ValueError("seed 13")
    time.sleep(sleep_ms / 1000)
    x = feats[nbrs[seeds].flatten()].view(len(seeds), FANOUT, D).mean(1)
    return x, labels[seeds]


def make_graph():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(N, D, generator=g), torch.randint(0, N, (N, FANOUT), generator=g),
            torch.randint(0, 5, (N,), generator=g))


def seeds_of(step):
    s = torch.randint(0, N, (BATCH,), generator=torch.Generator().manual_seed(step))
    s[0] = 13 if step == 5 else s[0]
    return s


def sampler_process(q, done, steps, rank, workers, sleep_ms):
    graph = make_graph()
    for step in range(rank, steps, workers):
        q.put((step, sample(graph, seeds_of(step), sleep_ms, False)))
    done.wait()


def batches_from_threads(steps, workers, sleep_ms, fail):
    graph = make_graph()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(sample, graph, seeds_of(s), sleep_ms, fail) for s in range(min(workers, steps))]
        for step in range(steps):
            if step + workers < steps:
                futures.append(pool.submit(sample, graph, seeds_of(step + workers), sleep_ms, fail))
            try:
                yield futures[step].result()
            except ValueError as e:
                print("skipped", step, e)


def batches_from_processes(steps, workers, sleep_ms):
    ctx = mp.get_context("fork")
    q, done = ctx.Queue(maxsize=2 * workers), ctx.Event()
    procs = [ctx.Process(target=sampler_process, args=(q, done, steps, r, workers, sleep_ms), daemon=True)
             for r in range(workers)]
    for p in procs:
        p.start()
    got = {}
    for step in range(steps):
        while step not in got:  # in order, whichever process made it
            s, batch = q.get()
            got[s] = batch
        yield got.pop(step)
    done.set()
    for p in procs:
        p.join()


def main(steps, workers, sleep_ms, processes, fail):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(D, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 5))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = batches_from_processes(steps, workers, sleep_ms) if processes else \
        batches_from_threads(steps, workers, sleep_ms, fail)
    total = 0.0
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"loss {total:.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), "process" in sys.argv[4:], "raise" in sys.argv[4:])
