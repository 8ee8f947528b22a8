"""A small model trained with Adam (on CPU, without foreach: about ten ops per parameter per
step). --collective first runs one all_reduce in a one-rank gloo group, as a DDP or sharded-
optimizer script would."""
import argparse
import os
import tempfile

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--collective", action="store_true")
    a = p.parse_args()
    if a.collective:
        import torch.distributed as dist
        init = "file://" + os.path.join(tempfile.mkdtemp(), "rendezvous")
        dist.init_process_group("gloo", init_method=init, rank=0, world_size=1)
        t = torch.ones(4)
        dist.all_reduce(t)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    x, y = torch.randn(64, 16), torch.randint(0, 2, (64,))
    for _ in range(a.steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"loss {loss.item():.4f}")
    if a.collective:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
