"""A GNN whose first layer aggregates before it uses a parameter, with dropout on its input:
its first ops work on tensors that need no grad (as in GraphSAGE-mean and GIN layers, and
F.dropout(x) on the input features). No gnnprof import, no record_function.

usage: first_layer_no_grad.py STEPS"""
import sys

import torch


class MeanAggregate(torch.nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.lin = torch.nn.Linear(dim_in, dim_out)

    def forward(self, x, src, dst):
        x = torch.nn.functional.dropout(x, 0.5, self.training)
        agg = torch.zeros_like(x).index_add_(0, dst, x[src])  # no parameter yet
        return self.lin(agg)


def main(steps):
    torch.manual_seed(0)
    nodes, edges = 4000, 40000
    x = torch.randn(nodes, 64)
    src, dst = torch.randint(0, nodes, (edges,)), torch.randint(0, nodes, (edges,))
    y = torch.randint(0, 4, (nodes,))
    model = MeanAggregate(64, 4)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(steps):
        model.train()
        loss = torch.nn.functional.cross_entropy(model(x, src, dst), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(x, src, dst).argmax(1) == y).float().mean().item()
    print("accuracy above chance", acc > 0.0)


if __name__ == "__main__":
    main(int(sys.argv[1]))
