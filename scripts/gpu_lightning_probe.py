"""Which frames call a LightningModule's training_step, and what gnnprof's tracer selected by then
(docs/gpu-validation.md, third session): run under `gnnprof run` on a machine with Lightning.
Its defaults are the minimal module whose training_step was traced on the H200 (callbacks: 1);
--like-mlp takes every difference from tests/python/scripts/lightning_mlp.py, whose
training_step was not, and each flag one of them, to bisect (scripts/gpu_frameworks.sh)."""
import argparse
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as pl

p = argparse.ArgumentParser()
p.add_argument("--like-mlp", action="store_true", help="all of the flags below")
p.add_argument("--log", action="store_true", help="self.log in training_step")
p.add_argument("--shuffle", action="store_true")
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--batches", type=int, default=8)
p.add_argument("--deep", action="store_true", help="lightning_mlp.py's Sequential model and sizes")
p.add_argument("--no-dump", action="store_true", help="no frame dump from training_step (the end stats only)")
p.add_argument("--script", help="run this script as __main__ instead of the probe's module, then the end stats")
args = p.parse_args()
if args.script:
    import runpy
    sys.argv = [args.script]
    runpy.run_path(args.script, run_name="__main__")
    from gnnprof import _native as nat
    print("== end selected:", nat.selected())
    print("== end stats:", nat.stats())
    sys.exit(0)
if args.like_mlp:
    args.log = args.shuffle = args.deep = True
    args.epochs, args.batches = 2, 60
dim, rows = (256, 256) if args.deep else (64, 64)
print("== probe:", vars(args), flush=True)

N = [0]


def dump(tag):
    from gnnprof import _native as nat, _lines as L
    pre = L.library_prefixes()
    print("==", tag, "selected:", nat.selected(), flush=True)
    print("== stats:", nat.stats(), flush=True)
    f = sys._getframe(2)
    n = 0
    while f is not None and n < 45:
        fn = f.f_code.co_filename
        lib = any(fn.startswith(q) for q in pre)
        print(f"  {n:2d} {'L' if lib else 'U'} {fn}:{f.f_lineno} {f.f_code.co_qualname}", flush=True)
        f = f.f_back
        n += 1


class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        if args.deep:
            self.net = torch.nn.Sequential(torch.nn.Linear(dim, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
        else:
            self.net = torch.nn.Linear(dim, 10)

    def training_step(self, batch, batch_idx):
        N[0] += 1
        if N[0] in (1, 3) and not args.no_dump:
            dump(f"training_step call {N[0]}")
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        if args.log:
            self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


data = TensorDataset(torch.randn(args.batches * rows, dim), torch.randint(0, 10, (args.batches * rows,)))
t = pl.Trainer(max_epochs=args.epochs, accelerator="gpu" if torch.cuda.is_available() else "cpu", devices=1, logger=False,
               enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
t.fit(M(), DataLoader(data, batch_size=rows, shuffle=args.shuffle))
from gnnprof import _native as nat
print("== end selected:", nat.selected())
print("== end stats:", nat.stats())
