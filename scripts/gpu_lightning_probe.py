"""Which frames call a LightningModule's training_step, and what gnnprof's tracer selected by then
(docs/gpu-validation.md, third session): run under `gnnprof run` on a machine with Lightning.
Traced here on the H200 (callbacks: 1), while tests/python/scripts/lightning_mlp.py's was not."""
import sys
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as pl

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
        lib = any(fn.startswith(p) for p in pre)
        print(f"  {n:2d} {'L' if lib else 'U'} {fn}:{f.f_lineno} {f.f_code.co_qualname}", flush=True)
        f = f.f_back
        n += 1


class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(64, 10)

    def training_step(self, batch, batch_idx):
        N[0] += 1
        if N[0] in (1, 3):
            dump(f"training_step call {N[0]}")
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


data = TensorDataset(torch.randn(8 * 64, 64), torch.randint(0, 10, (8 * 64,)))
t = pl.Trainer(max_epochs=1, accelerator="gpu" if torch.cuda.is_available() else "cpu", devices=1, logger=False, enable_checkpointing=False,
               enable_progress_bar=False, enable_model_summary=False)
t.fit(M(), DataLoader(data, batch_size=64))
from gnnprof import _native as nat
print("== end selected:", nat.selected())
print("== end stats:", nat.stats())
