#!/usr/bin/python3
"""The torch op observer's cost on the two Python loops of bench/python_overhead.py, measured
inside one process under libgnnprof_preload.so with blocks of steps interleaved: RecordFunction
off on the loop's thread (torch._C._autograd._enable_record_function(False): the observer sees
nothing, plain torch) and on. Machine noise, which on a 2-core VM moves whole runs by 10-20 %,
hits both modes alike; what the preload costs outside the observer (its threads, the
periodic flush) is what python_overhead.py's process-level comparison adds.

    bench/python_inproc_overhead.py --preload build/lib/libgnnprof_preload.so [--rounds 30]
"""
import argparse, importlib.util, os, random, statistics, subprocess, sys, time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)


def interleaved_blocks(order, rounds, block):
    """Per-step times of each mode: block(mode) runs one block and returns its time per step;
    modes in `order`, reversed every other round."""
    times = {m: [] for m in order}
    for r in range(rounds):
        for m in (order if r % 2 == 0 else order[::-1]):
            times[m].append(block(m))
    return times


def print_ratios(times, order, width):
    """Each mode after the first against the first: median of the per-round ratios, its 95 %
    bootstrap CI, the cost per step, and the ratios' p25..p75."""
    base = times[order[0]]
    rng = random.Random(0)
    for m in order[1:]:
        ratios = sorted(x / b for x, b in zip(times[m], base))
        med = statistics.median(ratios)
        boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
        print(f"  {m:{width}s} vs {order[0]}: median ratio {med:.4f} ({100 * (med - 1):+.2f} %, 95 % CI "
              f"{100 * (boot[49] - 1):+.2f}..{100 * (boot[1949] - 1):+.2f} %; "
              f"{1e6 * statistics.median(base) * (med - 1):+.0f} us/step), "
              f"p25..p75 {ratios[len(ratios) // 4]:.4f}..{ratios[3 * len(ratios) // 4]:.4f}")


def small_ops():
    import torch
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    return step


def sage_setup():
    """The Python sample's module, arguments, graph and features, model and optimizer (its
    defaults); bench/python_sample_inproc.py uses them too."""
    import torch
    spec = importlib.util.spec_from_file_location("sage_train", os.path.join(root, "samples/python/sage_train.py"))
    st = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(st)
    args = st.parse_args([])
    gen = torch.Generator().manual_seed(args.seed)
    indptr, indices, labels = st.make_graph(args.nodes, args.avg_degree, args.classes, gen)
    feats = st.feature_file(args, labels)
    train_nodes = torch.randperm(args.nodes, generator=gen)[: args.nodes * 8 // 10]
    model = st.Sage(args.feat_dim, args.hidden, args.classes)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    return st, args, (train_nodes, indptr, indices, feats, labels), model, opt


def sage():
    import torch
    import torch.nn.functional as F
    st, args, (train_nodes, indptr, indices, feats, labels), model, opt = sage_setup()
    bgen = torch.Generator().manual_seed(args.seed + 1)

    def step():
        mfgs = st.make_batch(0, args, train_nodes, indptr, indices, feats, labels, torch.device("cpu"), bgen)
        opt.zero_grad()
        F.cross_entropy(model(mfgs, mfgs[0].srcdata["x"]), mfgs[-1].dstdata["y"]).backward()
        opt.step()
    return step


def measure(rounds):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    enable = torch._C._autograd._enable_record_function
    for name, make, block_s in (("small-op MLP loop (bench/small_ops.py's model)", small_ops, 0.05),
                                ("Python GNN sample (samples/python/sage_train.py's step)", sage, 0.3)):
        step = make()
        for _ in range(5):
            step()
        t0 = time.perf_counter()
        for _ in range(5):
            step()
        steps = max(3, int(block_s / ((time.perf_counter() - t0) / 5)))
        def block(mode):
            enable(mode == "observer on")
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            return (time.perf_counter() - t0) / steps
        order = ["plain", "observer on"]
        times = interleaved_blocks(order, rounds, block)
        enable(True)
        print(f"{name}: {rounds} rounds x {steps} steps per mode, order alternating; "
              f"plain {1e3 * statistics.median(times['plain']):.3f} ms/step")
        print_ratios(times, order, 11)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload")
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    if os.environ.get("GNNPROF_INPROC_CHILD") != "1":
        if not a.preload:
            raise SystemExit("--preload PATH is required")
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(a.preload), GNNPROF_INPROC_CHILD="1", GNNPROF_QUIET="1",
                   GNNPROF_OUTPUT=os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gnnprof-inproc-{os.getpid()}.json"),
                   OMP_NUM_THREADS="1")
        sys.exit(subprocess.call([sys.executable, __file__, "--rounds", str(a.rounds)], env=env))
    measure(a.rounds)


if __name__ == "__main__":
    main()
