#!/usr/bin/python3
"""GraphSAGE mini-batch training in plain PyTorch: the zero-code sample of gnnprof.

    gnnprof run -o sage.json -- /usr/bin/python3 samples/python/sage_train.py --steps 50
    gnnprof ab --baseline '/usr/bin/python3 samples/python/sage_train.py --prefetch 0' \\
               --candidate '/usr/bin/python3 samples/python/sage_train.py --prefetch 2' \\
               --preload

The injected library sees torch's ops and traces the training loop's lines.
The script is what a GNN engineer writes without DGL/PyG: a synthetic power-law graph in CSC
form, neighbour sampling written in torch, node features in a large fp16 file memory-mapped
with numpy, a two-layer GraphSAGE-mean model, Adam. Batches are DGL-like blocks whose
`srcdata["x"]` gathers the features (and copies them to the device) on first access, inside a
property: the seed's `x = mfgs[0].srcdata['x']` line. A record_function scope names the
sampling ("sample"); forward, backward and optimizer are found by the observer on its own.
--prefetch K wraps the batches in gnnprof.prefetch, which prepares up to K ahead on a thread of
its own, features included (the one gnnprof import; without gnnprof's package only K = 0 runs).

--ddp trains with DistributedDataParallel, one process per rank as torch.distributed.run starts
them (Gloo on CPU, NCCL with --device cuda), uneven step counts handled with Join:

    gnnprof run -o ddp.json -- /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 \
        samples/python/sage_train.py --ddp --steps 20 --straggler-rank 1 --straggler-factor 3
    gnnprof merge gnnprof-ddp.rank0.*.json gnnprof-ddp.rank1.*.json --html merged.html

--straggler-rank R --straggler-factor F gives rank R F times the seeds per batch: more
sampling, gathering and compute, so that gnnprof merge has a straggler to find.
"""
import argparse
import contextlib
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd.profiler import record_function


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=200_000)
    p.add_argument("--avg-degree", type=int, default=10)
    p.add_argument("--feat-dim", type=int, default=128)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--fanouts", default="10,5")
    p.add_argument("--steps", type=int, default=40, help="optimizer steps (iterations)")
    p.add_argument("--prefetch", type=int, default=None,
                   help="batches prepared ahead on a thread by gnnprof.prefetch (0: inline; default: "
                        "GNNPROF_PREFETCH, else 0)")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave)")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/gnnprof"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--exit-code", type=int, default=0, help="exit with this status (tests)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (features are gathered on the host, then copied)")
    p.add_argument("--ddp", action="store_true", help="DistributedDataParallel; RANK/WORLD_SIZE from torch.distributed.run")
    p.add_argument("--straggler-rank", type=int, default=-1, help="with --ddp: this rank gets --straggler-factor x the seeds")
    p.add_argument("--straggler-factor", type=float, default=1.0)
    p.add_argument("--uneven", type=int, default=0, help="with --ddp: rank r runs --steps + r * UNEVEN steps (Join)")
    p.add_argument("--iteration-times", action="store_true",
                   help="also print each iteration's wall time (bench/python_overhead.py --per-iteration)")
    p.add_argument("--print-gathered", action="store_true",
                   help="print the feature rows and bytes the training loop gathered (tests)")
    p.add_argument("--torch-profiler", action="store_true",
                   help="run the loop under torch.autograd.profiler.profile() (overhead comparison)")
    a = p.parse_args(argv)
    a.fanouts = [int(x) for x in a.fanouts.split(",")]
    if a.nodes < 100 or a.steps < 1 or (a.prefetch is not None and a.prefetch < 0) or min(a.fanouts) < 1 or a.straggler_factor <= 0 or a.uneven < 0:
        p.error("--nodes >= 100, --steps >= 1, --prefetch >= 0, fanouts >= 1, --straggler-factor > 0 "
                "and --uneven >= 0 required")
    return a


def make_graph(n, avg_degree, classes, gen):
    """Chung-Lu style power-law in-degrees with homophily: CSC (indptr, indices), labels."""
    labels = torch.randint(0, classes, (n,), generator=gen)
    weights = (torch.arange(1, n + 1, dtype=torch.float64) ** -0.8)
    weights = weights[torch.randperm(n, generator=gen)]
    m = n * avg_degree
    dst = torch.multinomial(weights, m, replacement=True, generator=gen)
    # Homophily: 70 % of sources are drawn from nodes of the same class (a shuffled pick).
    src = torch.randint(0, n, (m,), generator=gen)
    order = torch.argsort(labels)
    by_class_start = torch.searchsorted(labels[order], torch.arange(classes))
    counts = torch.bincount(labels, minlength=classes)
    same = torch.rand(m, generator=gen) < 0.7
    cls = labels[dst[same]]
    pick = (torch.rand(int(same.sum()), generator=gen) * counts[cls]).long()
    src[same] = order[by_class_start[cls] + pick]
    perm = torch.argsort(dst)
    indices = src[perm].contiguous()
    indptr = torch.zeros(n + 1, dtype=torch.long)
    indptr[1:] = torch.cumsum(torch.bincount(dst, minlength=n), 0)
    return indptr, indices, labels


def feature_file(args, labels):
    """fp16 features [nodes, feat_dim] on disk (written once), memory-mapped read-only."""
    gen = torch.Generator().manual_seed(args.seed + 7)  # its own: the same file however many ranks
    os.makedirs(args.cache, exist_ok=True)
    path = os.path.join(args.cache, f"py-feat-{args.nodes}-{args.feat_dim}-{args.classes}-{args.seed}.f16")
    if not os.path.exists(path):
        print(f"sage_train.py: writing {args.nodes * args.feat_dim * 2 / 2**20:.0f} MiB of features to {path}",
              file=sys.stderr)
        centers = torch.randn(args.classes, args.feat_dim, generator=gen)
        tmp = path + f".tmp{os.getpid()}"
        mm = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float16, shape=(args.nodes, args.feat_dim))
        for lo in range(0, args.nodes, 65536):
            hi = min(args.nodes, lo + 65536)
            x = centers[labels[lo:hi]] + 1.5 * torch.randn(hi - lo, args.feat_dim, generator=gen)
            mm[lo:hi] = x.half().numpy()
        mm.flush()
        del mm
        os.replace(tmp, path)
    # Copy-on-write mapping: pages are read from the file on first touch and never written back.
    return torch.from_numpy(np.load(path, mmap_mode="c"))


def sample_blocks(seeds, indptr, indices, fanouts, gen):
    """Uniform neighbour sampling, with replacement, outermost layer last: list of
    (src_nodes, dst_count, edge_src_local, edge_dst_local)."""
    blocks = []
    frontier = seeds
    for fanout in fanouts:
        start = indptr[frontier]
        deg = indptr[frontier + 1] - start
        has = deg > 0
        k = torch.full_like(deg, fanout)
        rnd = torch.rand(frontier.numel(), fanout, generator=gen)
        offs = (rnd * deg.clamp(min=1).unsqueeze(1)).long()
        nbr = indices[(start.unsqueeze(1) + offs).clamp(max=indices.numel() - 1)]
        dst_local = torch.arange(frontier.numel()).unsqueeze(1).expand(-1, fanout)
        mask = has.unsqueeze(1).expand(-1, fanout)
        nbr, dst_local = nbr[mask], dst_local[mask]
        all_nodes, inverse = torch.unique(torch.cat([frontier, nbr]), return_inverse=True)
        # Destination nodes first in the source list, as DGL blocks do.
        src_nodes = torch.cat([frontier, all_nodes[~torch.isin(all_nodes, frontier)]])
        remap = torch.empty(int(all_nodes.max()) + 1, dtype=torch.long)
        remap[src_nodes] = torch.arange(src_nodes.numel())
        blocks.append((src_nodes, frontier.numel(), remap[nbr], dst_local))
        del k, inverse
        frontier = src_nodes
    return list(reversed(blocks))


class NodeData:
    """A block's node data, DGL-style: `srcdata["x"]` reads the features of the block's source
    nodes on first access -- gathered from the memory-mapped file and, with a device, copied to
    it -- and keeps them; `dstdata["y"]` likewise the labels of its destination nodes."""

    def __init__(self, nodes, sources, device):
        self._nodes, self._sources, self._device, self._cache = nodes, sources, device, {}

    def __getitem__(self, key):
        value = self._cache.get(key)
        if value is None:
            value = self._sources[key][self._nodes]  # the lazy materialization: rows of the mmap
            if value.dtype == torch.float16:
                value = value.float()
            if self._device.type != "cpu":
                value = value.to(self._device)
            self._cache[key] = value
        return value

    def __contains__(self, key):
        return key in self._cache


class Block:
    """One message-flow graph (DGL's MFG): source nodes (destinations first), the edges as
    local (source, destination) indices, and lazy node data."""

    def __init__(self, src_nodes, num_dst, edge_src, edge_dst, sources, device):
        self.src_nodes, self.num_dst = src_nodes, num_dst
        self.edge_src, self.edge_dst = edge_src.to(device), edge_dst.to(device)
        self._src = NodeData(src_nodes, sources, device)
        self._dst = NodeData(src_nodes[:num_dst], sources, device)

    @property
    def srcdata(self):
        return self._src

    @property
    def dstdata(self):
        return self._dst

    def num_src_nodes(self):
        return self.src_nodes.numel()


class Sage(torch.nn.Module):
    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.self1, self.neigh1 = torch.nn.Linear(d_in, d_hidden), torch.nn.Linear(d_in, d_hidden, bias=False)
        self.self2, self.neigh2 = torch.nn.Linear(d_hidden, d_out), torch.nn.Linear(d_hidden, d_out, bias=False)

    @staticmethod
    def mean_agg(h, block):
        n_dst = block.num_dst
        out = torch.zeros(n_dst, h.shape[1], device=h.device).index_add_(0, block.edge_dst, h[block.edge_src])
        deg = torch.bincount(block.edge_dst, minlength=n_dst).clamp(min=1).unsqueeze(1)
        return out / deg

    def forward(self, mfgs, x):
        b1, b2 = mfgs
        h = F.relu(self.self1(x[:b1.num_dst]) + self.neigh1(self.mean_agg(x, b1)))
        return self.self2(h[:b2.num_dst]) + self.neigh2(self.mean_agg(h, b2))


def make_batch(step, args, train_nodes, indptr, indices, feats, labels, device, gen):
    """Sampled blocks, input layer first. No feature is read here: the loop's
    `mfgs[0].srcdata["x"]` does that (as in DGL), unless a prefetcher touches it first."""
    with record_function("sample"):
        seeds = train_nodes[torch.randint(0, train_nodes.numel(), (args.batch_size,), generator=gen)]
        raw = sample_blocks(seeds, indptr, indices, args.fanouts, gen)
    sources = {"x": feats, "y": labels}
    return [Block(src, n, es, ed, sources, device) for src, n, es, ed in raw]


def prefetch_features(mfgs):
    """What a prefetcher does ahead of the loop: read the batch's features and labels."""
    mfgs[0].srcdata["x"]
    mfgs[-1].dstdata["y"]
    return mfgs


def sampled(args, *data):
    """The batches of one pass, sampled here and now: the loader the loop (or a prefetcher)
    pulls from."""
    gen = torch.Generator().manual_seed(args.seed + 1)
    for step in range(args.steps):
        yield make_batch(step, args, *data, gen)


def batches(args, *data):
    """The loop's batches: through gnnprof.prefetch when gnnprof's package is importable (under
    `gnnprof run`, or with PYTHONPATH=build/python), which prepares them --prefetch K ahead on a
    thread (K = 0: inline, the same code), features gathered ahead by prefetch_features; else,
    with K = 0, the plain generator."""
    try:
        import gnnprof
    except ImportError:
        gnnprof = None
    depth = args.prefetch
    if depth is None:
        env = os.environ.get("GNNPROF_PREFETCH", "")
        depth = gnnprof.resolve_depth(0) if gnnprof is not None else int(env) if env.isdigit() else 0
    if gnnprof is None:
        if depth > 0:
            raise SystemExit("sage_train.py: --prefetch needs gnnprof's Python package (gnnprof run, or "
                             "PYTHONPATH=build/python)")
        return sampled(args, *data)
    return gnnprof.prefetch(sampled(args, *data), depth=depth, prepare=prefetch_features if depth > 0 else None)


def main(argv):
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    rank, world = 0, 1
    if args.ddp:
        import torch.distributed as dist
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        if rank == args.straggler_rank:
            args.batch_size = max(1, int(args.batch_size * args.straggler_factor))
        args.steps += rank * args.uneven
    gen = torch.Generator().manual_seed(args.seed)
    indptr, indices, labels = make_graph(args.nodes, args.avg_degree, args.classes, gen)
    if args.ddp and rank == 0:
        feature_file(args, labels)  # rank 0 writes the file once; the others wait
    if args.ddp:
        dist.barrier()
    feats = feature_file(args, labels)
    perm = torch.randperm(args.nodes, generator=gen)
    train_nodes, val_nodes = perm[: args.nodes * 8 // 10], perm[args.nodes * 8 // 10:]
    torch.manual_seed(args.seed)  # the same initial weights in every run (A/B)
    model = Sage(args.feat_dim, args.hidden, args.classes).to(device)
    if args.ddp:
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    # Each rank draws its own batches.
    args.seed += 1000 * rank

    f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    t0, c0 = time.perf_counter(), time.thread_time()
    losses, ends = [], []
    prof = torch.autograd.profiler.profile() if args.torch_profiler else None
    if prof is not None:
        prof.__enter__()
    join = contextlib.nullcontext()
    if args.ddp:
        from torch.distributed.algorithms.join import Join
        join = Join([model])  # ranks with fewer batches shadow the others' allreduces
    gathered = 0
    with join:
        for mfgs in batches(args, train_nodes, indptr, indices, feats, labels, device):
            x = mfgs[0].srcdata["x"]  # gathers the input nodes' features (and copies them) on first access
            y = mfgs[-1].dstdata["y"]
            gathered += mfgs[0].num_src_nodes()
            opt.zero_grad()
            loss = F.cross_entropy(model(mfgs, x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            ends.append(time.perf_counter())
    if prof is not None:
        prof.__exit__(None, None, None)
    loop_s, loop_cpu = time.perf_counter() - t0, time.thread_time() - c0
    loop_faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f0  # bench/loop_faults.py

    model.eval()
    net = model.module if args.ddp else model
    with torch.no_grad():
        vgen = torch.Generator().manual_seed(args.seed + 2)
        seeds = val_nodes[torch.randint(0, val_nodes.numel(), (2048,), generator=vgen)]
        mfgs = [Block(src, n, es, ed, {"x": feats, "y": labels}, device)
                for src, n, es, ed in sample_blocks(seeds, indptr, indices, args.fanouts, vgen)]
        correct = net(mfgs, mfgs[0].srcdata["x"]).argmax(1) == mfgs[-1].dstdata["y"]
        acc = correct.float().mean()
        if args.ddp:
            dist.all_reduce(acc)
            acc /= world
        acc = acc.item()
    who = f"rank {rank}/{world} " if args.ddp else ""
    print(f"{who}steps {len(losses)} loss {losses[0]:.3f} -> {losses[-1]:.3f} val_acc {acc:.3f} "
          f"loop {loop_s:.3f} s ({1e3 * loop_s / len(losses):.2f} ms/step; loop thread's CPU time {loop_cpu:.3f} s, "
          f"{loop_faults} minor page faults)")
    if args.print_gathered:  # the lazy line's exact bytes, for the tests (fp16 rows)
        print(f"gathered_rows {gathered} bytes {gathered * args.feat_dim * 2}")
    if args.iteration_times:
        print("iteration_s", " ".join(f"{b - a:.6f}" for a, b in zip([t0] + ends, ends)))
    if args.ddp:
        dist.destroy_process_group()
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
