"""GraphSAGE-mean layers written out as many GNN scripts do (a slice for the destination nodes,
a gather and index_add_ for the neighbours' mean, bincount for the degrees), no gnnprof import.
Each layer's backward is a handful of index and slice nodes whose engine work around the node
(input buffers, freeing consumed gradients) is a good part of their cost.

usage: sage_layers.py STEPS"""
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
N, FIN, HID, C = 20000, 128, 128, 8
feats = torch.randn(N, FIN)
labels = torch.randint(0, C, (N,))


class SAGEConv(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc_self = torch.nn.Linear(i, o)
        self.fc_neigh = torch.nn.Linear(i, o)

    def forward(self, src, dst, n_dst, h):
        agg = torch.zeros(n_dst, h.shape[1])
        agg.index_add_(0, dst, h[src])
        deg = torch.bincount(dst, minlength=n_dst).clamp(min=1).unsqueeze(1)
        return self.fc_self(h[:n_dst]) + self.fc_neigh(agg / deg)


layers = torch.nn.ModuleList([SAGEConv(FIN, HID), SAGEConv(HID, C)])
opt = torch.optim.Adam(layers.parameters(), lr=1e-3)
for step in range(int(sys.argv[1])):
    n0, n1, n2 = 8000, 1600, 320
    nodes = torch.randint(0, N, (n0,))
    blocks = [(torch.randint(0, n0, (n1 * 5,)), torch.randint(0, n1, (n1 * 5,)), n1),
              (torch.randint(0, n1, (n2 * 5,)), torch.randint(0, n2, (n2 * 5,)), n2)]
    h = feats[nodes]
    h = F.relu(layers[0](*blocks[0], h))
    out = layers[1](*blocks[1], h)
    loss = F.cross_entropy(out, labels[nodes[:n2]])
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
