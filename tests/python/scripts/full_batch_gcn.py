"""Full-batch GCN, the shape of PyG's introductory example in plain PyTorch: the whole graph
each epoch, a train() function the module's loop calls, test() every 10 epochs, and the model
(message passing by gather and index_add_) in the same file. No DataLoader, no gnnprof import.

usage: full_batch_gcn.py [EPOCHS]"""
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
N, E, D, C = 2000, 20000, 64, 7
x = torch.randn(N, D)
y = torch.randint(0, C, (N,))
edge_index = torch.randint(0, N, (2, E))
train_mask = torch.rand(N) < 0.2
deg = torch.zeros(N).index_add_(0, edge_index[1], torch.ones(E)).clamp(min=1)


class GCNConv(torch.nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.lin = torch.nn.Linear(i, o)

    def forward(self, x, edge_index):
        h = self.lin(x)
        msg = h[edge_index[0]] / deg[edge_index[1]].unsqueeze(1)
        return torch.zeros_like(h).index_add_(0, edge_index[1], msg)


class GCN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GCNConv(D, 64)
        self.conv2 = GCNConv(64, C)

    def forward(self, x, edge_index):
        return self.conv2(F.dropout(F.relu(self.conv1(x, edge_index)), 0.5, self.training), edge_index)


model = GCN()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)


def train():
    model.train()
    optimizer.zero_grad()
    out = model(x, edge_index)
    loss = F.cross_entropy(out[train_mask], y[train_mask])
    loss.backward()
    optimizer.step()
    return float(loss)


@torch.no_grad()
def test():
    model.eval()
    pred = model(x, edge_index).argmax(1)
    return float((pred[~train_mask] == y[~train_mask]).float().mean())


for epoch in range(1, int(sys.argv[1]) + 1 if len(sys.argv) > 1 else 31):
    loss = train()
    if epoch % 10 == 0:
        print(f"Epoch {epoch:03d} loss {loss:.4f} acc {test():.4f}")
