"""A PyTorch Geometric training script as its users write it (the shape of PyG's
examples/ogbn_products_sage.py), on a random graph, with no gnnprof in it. Needs torch_geometric;
NeighborLoader needs pyg-lib or torch-sparse, else RandomNodeLoader (plain torch) feeds the loop."""
import argparse
import time

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import SAGEConv

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
parser.add_argument("--nodes", type=int, default=100_000)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--loader", choices=["auto", "neighbor", "random"], default="auto")
args = parser.parse_args()

gen = torch.Generator().manual_seed(0)
num_nodes, num_feats, num_classes = args.nodes, 128, 40
data = Data(x=torch.randn(num_nodes, num_feats, generator=gen),
            edge_index=torch.randint(0, num_nodes, (2, num_nodes * 15), generator=gen),
            y=torch.randint(0, num_classes, (num_nodes,), generator=gen))
train_idx = torch.randperm(num_nodes, generator=gen)[: num_nodes // 5]


def make_loader():
    if args.loader in ("auto", "neighbor"):
        try:
            from torch_geometric.loader import NeighborLoader
            loader = NeighborLoader(data, num_neighbors=[10, 5], batch_size=1024,
                                    input_nodes=train_idx, shuffle=True)
            next(iter(loader))
            return loader, "NeighborLoader"
        except ImportError as e:
            if args.loader == "neighbor":
                raise
            print(f"NeighborLoader unavailable ({e}); RandomNodeLoader instead")
    from torch_geometric.loader import RandomNodeLoader
    return RandomNodeLoader(data, num_parts=40, shuffle=True), "RandomNodeLoader"


class SAGE(torch.nn.Module):
    def __init__(self, in_channels, hidden, out_channels):
        super().__init__()
        self.convs = torch.nn.ModuleList([SAGEConv(in_channels, hidden), SAGEConv(hidden, out_channels)])

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.relu(x)
                x = F.dropout(x, p=0.5, training=self.training)
        return x


loader, kind = make_loader()
device = torch.device(args.device)
model = SAGE(num_feats, 256, num_classes).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.003)


def train(epoch):
    model.train()
    total_loss = total_examples = 0
    for batch in loader:
        batch = batch.to(device)
        n = getattr(batch, "batch_size", batch.num_nodes)
        optimizer.zero_grad()
        out = model(batch.x, batch.edge_index)[:n]
        loss = F.cross_entropy(out, batch.y[:n])
        loss.backward()
        optimizer.step()
        total_loss += float(loss) * n
        total_examples += n
    return total_loss / total_examples


print(f"loader {kind}, device {device}")
for epoch in range(1, args.epochs + 1):
    t0 = time.perf_counter()
    loss = train(epoch)
    print(f"epoch {epoch:02d}, loss {loss:.4f}, {time.perf_counter() - t0:.2f} s")
