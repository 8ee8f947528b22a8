"""A training loop whose message passing is a torch.autograd.Function of its own (as DGL's
GSpMM is) and whose readout is a torch.jit.script function: their backward nodes are created
by the Function's apply and the graph executor, between ops."""
import sys

import torch


class Aggregate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, adj):
        ctx.save_for_backward(adj)
        return adj @ x

    @staticmethod
    def backward(ctx, grad):
        (adj,) = ctx.saved_tensors
        return adj.t() @ grad, None


@torch.jit.script
def readout(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.tanh(h @ w).sum(1)


steps = int(sys.argv[1])
torch.manual_seed(0)
adj = torch.rand(1500, 1500)
x = torch.randn(1500, 64)
lin = torch.nn.Linear(64, 64)
w = torch.randn(64, 8, requires_grad=True)
opt = torch.optim.SGD(list(lin.parameters()) + [w], lr=1e-3)
for _ in range(steps):
    h = lin(x)
    h = Aggregate.apply(h, adj)
    out = readout(h, w)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
