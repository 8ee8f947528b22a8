#!/usr/bin/python3
"""Batches a DataLoader fetches item by item (docs/performance.md, "Item-by-item DataLoader
fetches"): what the item-by-item-fetch rule's advice buys, and what gnnprof's wrapper of torch's
_MapDatasetFetcher.fetch (python/gnnprof/_loader_fetch.py) costs a batch.

1. Plain Python, no gnnprof: a pass of BATCHES batches through DataLoader(dataset,
   batch_size=B, shuffle=True) against DataLoader(dataset, batch_size=None,
   sampler=BatchSampler(RandomSampler(dataset), B, False)), interleaved over ROUNDS rounds, for
   a TensorDataset of two int64 tensors and a 1-d tensor of ids, B = 256 and 1024. Prints the
   median time a batch of each, and their ratio.
2. Under `gnnprof run --lines none` (the package and its wrapper in; torch's RecordFunction off
   for the thread, so that no op is observed): one fetcher's hooked fetch against the original
   it wraps (`__wrapped__`), alternating blocks: batches of 2 items (the wrapper's fixed cost
   stands out) and of 1024 items of the TensorDataset. Prints the
   difference a batch.

    /usr/bin/python3 bench/loader_fetch.py --gnnprof build/cli/gnnprof --rounds 20
"""
import argparse
import statistics
import sys
import tempfile
import time

N, BATCHES = 200000, 40


def datasets(torch):
    from torch.utils.data import TensorDataset
    g = torch.Generator().manual_seed(0)
    return {"TensorDataset": TensorDataset(torch.randint(0, N, (N,), generator=g), torch.randint(0, N, (N,), generator=g)),
            "Tensor": torch.randint(0, N, (N,), generator=g)}


def advice(rounds):
    import torch
    from torch.utils.data import BatchSampler, DataLoader, RandomSampler

    def per_batch(loader):
        t = time.perf_counter()
        n = 0
        for _ in loader:
            n += 1
            if n == BATCHES:
                break
        return (time.perf_counter() - t) / n

    for name, ds in datasets(torch).items():
        for b in (256, 1024):
            makers = {"item by item": lambda: DataLoader(ds, batch_size=b, shuffle=True),
                      "batched": lambda: DataLoader(ds, batch_size=None, sampler=BatchSampler(RandomSampler(ds), b, False))}
            got = {k: [] for k in makers}
            for r in range(rounds):
                for k in (list(makers) if r % 2 else list(makers)[::-1]):
                    got[k].append(per_batch(makers[k]()))
            i, o = statistics.median(got["item by item"]), statistics.median(got["batched"])
            print(f"{name:14} B={b:5}  item by item {i * 1e3:7.3f} ms  batched {o * 1e3:7.3f} ms  ratio {i / o:5.1f}x")


def child(rounds):
    import torch
    from torch.utils.data._utils import collate, fetch
    from hook_blocks import alternate, wrapped
    hooked, raw = wrapped(fetch._MapDatasetFetcher.fetch, "torch's _MapDatasetFetcher.fetch")
    torch._C._autograd._enable_record_function(False)
    tensors = datasets(torch)["TensorDataset"]
    for what, ds, b, n in (("a TensorDataset", tensors, 2, 5000), ("a TensorDataset", tensors, 1024, 20)):
        f = fetch._MapDatasetFetcher(ds, True, collate.default_collate, False)
        ids = [torch.randint(0, N, (b,)).tolist() for _ in range(16)]
        o, h, q1, q3 = alternate(hooked, raw, lambda fn, i: fn(f, ids[i & 15]), rounds, n)
        print(f"fetch of {b:4} items of {what:15}: original {o * 1e6:8.1f} us  hooked {h * 1e6:8.1f} us  difference "
              f"{(h - o) * 1e6:+6.2f} us ({100 * (h / o - 1):+.1f} %; round differences "
              f"{q1 * 1e6:+.2f}..{q3 * 1e6:+.2f} us, quartiles)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gnnprof", default="build/cli/gnnprof")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--child", type=int)
    a = ap.parse_args()
    if a.child:
        return child(a.child)
    advice(a.rounds)
    from hook_blocks import under_gnnprof
    with tempfile.TemporaryDirectory() as d:
        return under_gnnprof(a.gnnprof, __file__, ["--child", str(a.rounds)], d)


if __name__ == "__main__":
    sys.exit(main())
