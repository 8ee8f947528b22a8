"""A PyTorch Lightning script as its users write it, with no gnnprof in it: a LightningModule
whose training_step Lightning's loop calls inside optimizer.step(closure). Needs lightning (or
pytorch_lightning)."""
import argparse
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="gpu" if torch.cuda.is_available() else "cpu")
parser.add_argument("--batches", type=int, default=60)
args = parser.parse_args()


class MLP(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


gen = torch.Generator().manual_seed(0)
data = TensorDataset(torch.randn(args.batches * 256, 256, generator=gen),
                     torch.randint(0, 10, (args.batches * 256,), generator=gen))
trainer = pl.Trainer(max_epochs=2, accelerator=args.device, devices=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
t0 = time.perf_counter()
trainer.fit(MLP(), DataLoader(data, batch_size=256, shuffle=True))
print(f"fit {time.perf_counter() - t0:.2f} s, {trainer.global_step} steps")
