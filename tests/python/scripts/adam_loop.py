"""A small model trained by an optimizer whose step runs many ops (Adam on CPU, without foreach:
about ten per parameter). --collective before: one all_reduce in a one-rank gloo group before
training, as a DDP script's constructor does; --collective in-step: the optimizer's step
all-reduces the gradients itself each step, as a sharded or averaging optimizer does;
--collective late: the same from step --late-from on (an averaging optimizer past its warm-up),
in a process that ran no collective before; --closure: LBFGS, whose step runs the closure's
forward and backward."""
import argparse
import os
import shutil
import tempfile

import torch


class AllReduceAdam(torch.optim.Adam):
    from_step = 0

    def step(self, closure=None):
        import torch.distributed as dist
        self.calls = getattr(self, "calls", 0) + 1
        for g in self.param_groups if self.calls > self.from_step else []:
            for p in g["params"]:
                if p.grad is not None:
                    dist.all_reduce(p.grad)
        return super().step(closure)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--collective", choices=["none", "before", "in-step", "late"], default="none")
    p.add_argument("--late-from", type=int, default=3, help="--collective late: the first step (0-based) that all-reduces")
    p.add_argument("--closure", action="store_true")
    p.add_argument("--adam-closure", action="store_true", help="Adam's step(closure), as skorch and Lightning call it")
    a = p.parse_args()
    rendezvous = None
    if a.collective != "none":
        import torch.distributed as dist
        rendezvous = tempfile.mkdtemp()
        dist.init_process_group("gloo", init_method="file://" + os.path.join(rendezvous, "r"), rank=0, world_size=1)
        if a.collective == "before":
            dist.all_reduce(torch.ones(4))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    x, y = torch.randn(64, 16), torch.randint(0, 2, (64,))
    if a.closure:
        opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=2)
    elif a.collective in ("in-step", "late"):
        opt = AllReduceAdam(model.parameters(), lr=1e-3, foreach=False)
        opt.from_step = a.late_from if a.collective == "late" else 0
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    for _ in range(a.steps):
        if a.closure or a.adam_closure:
            loss = opt.step(closure)
        else:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    print(f"loss {loss.item():.4f}")
    if rendezvous is not None:
        torch.distributed.destroy_process_group()
        shutil.rmtree(rendezvous, ignore_errors=True)


if __name__ == "__main__":
    main()
