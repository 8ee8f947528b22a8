#!/usr/bin/python3
"""A GAT trained the way plain-PyTorch tutorials write it, not for gnnprof: dense attention over
all node pairs of a random graph (700 nodes by default; masked by the adjacency), multi-head,
dropout, Adam, and an evaluation pass under no_grad every few epochs. No gnnprof import, no
record_function: what `gnnprof run` makes of an op-heavy script as users bring it.

    gnnprof run -o gat.json --html gat.html -- /usr/bin/python3 samples/python/gat_train.py
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class GATLayer(nn.Module):
    def __init__(self, d_in, d_out, heads, dropout):
        super().__init__()
        self.heads, self.d_out = heads, d_out
        self.w = nn.Linear(d_in, heads * d_out, bias=False)
        self.a_src = nn.Parameter(torch.randn(heads, d_out) * 0.1)
        self.a_dst = nn.Parameter(torch.randn(heads, d_out) * 0.1)
        self.dropout = dropout

    def forward(self, x, adj):
        n = x.shape[0]
        h = self.w(x).view(n, self.heads, self.d_out)                       # [n, H, d]
        e_src = (h * self.a_src).sum(-1)                                     # [n, H]
        e_dst = (h * self.a_dst).sum(-1)
        e = F.leaky_relu(e_src.unsqueeze(1) + e_dst.unsqueeze(0), 0.2)       # [n, n, H]
        e = e.masked_fill(~adj.unsqueeze(-1), float("-inf"))
        att = torch.softmax(e, dim=1)
        att = F.dropout(att, self.dropout, self.training)
        out = torch.einsum("ijh,jhd->ihd", att, h)                           # [n, H, d]
        return out.reshape(n, self.heads * self.d_out)


class GAT(nn.Module):
    def __init__(self, d_in, hidden, classes, heads, dropout):
        super().__init__()
        self.l1 = GATLayer(d_in, hidden, heads, dropout)
        self.l2 = GATLayer(hidden * heads, classes, 1, dropout)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, self.training)
        x = F.elu(self.l1(x, adj))
        x = F.dropout(x, self.dropout, self.training)
        return self.l2(x, adj)


def make_graph(n, avg_degree, d_in, classes, gen):
    labels = torch.randint(0, classes, (n,), generator=gen)
    centers = torch.randn(classes, d_in, generator=gen)
    x = centers[labels] + torch.randn(n, d_in, generator=gen) * 2
    p_same, p_other = avg_degree * 0.8 / (n / classes), avg_degree * 0.2 / n
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    prob = torch.where(same, torch.tensor(p_same), torch.tensor(p_other))
    adj = torch.rand(n, n, generator=gen) < prob
    adj = adj | adj.T | torch.eye(n, dtype=torch.bool)
    return x, labels, adj


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=700)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--eval-every", type=int, default=10)
    a = p.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    x, y, adj = make_graph(a.nodes, 8, 64, 7, gen)
    train = torch.rand(a.nodes, generator=gen) < 0.6
    model = GAT(64, a.hidden, 7, a.heads, 0.5)
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    t0 = time.perf_counter()
    for epoch in range(a.epochs):
        model.train()
        out = model(x, adj)
        loss = F.cross_entropy(out[train], y[train])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (epoch + 1) % a.eval_every == 0:
            model.eval()
            with torch.no_grad():
                acc = (model(x, adj).argmax(1)[~train] == y[~train]).float().mean().item()
            print(f"epoch {epoch + 1} loss {loss.item():.3f} val_acc {acc:.3f}")
    print(f"loop {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
