"""Link prediction over an edge list in a TensorDataset, as plain PyTorch scripts write it:
DataLoader(TensorDataset(src, dst), batch_size=B, shuffle=True) fetches each batch item by
item, in the loop's process or in WORKERS DataLoader workers. With "batched", the same loop
takes the batches from a BatchSampler (batch_size=None): one dataset[indices] a batch. No
gnnprof import.

usage: edge_batches.py STEPS WORKERS [batched]"""
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

N, E, D, B = 5000, 100000, 16, 1024


def main():
    steps, workers, batched = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:] == ["batched"]
    torch.manual_seed(0)
    edges = TensorDataset(torch.randint(0, N, (E,)), torch.randint(0, N, (E,)))
    if batched:
        loader = DataLoader(edges, batch_size=None, sampler=BatchSampler(RandomSampler(edges), batch_size=B, drop_last=False),
                            num_workers=workers)
    else:
        loader = DataLoader(edges, batch_size=B, shuffle=True, num_workers=workers)
    emb = torch.nn.Embedding(N, D)
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    total = 0.0
    for i, (a, b) in enumerate(loader):
        neg = torch.randint(0, N, b.shape)
        pos, negs = (emb(a) * emb(b)).sum(-1), (emb(a) * emb(neg)).sum(-1)
        loss = F.softplus(-pos).mean() + F.softplus(negs).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
        if i + 1 == steps:
            break
    print(f"steps {i + 1} loss {total / (i + 1):.4f}")


if __name__ == "__main__":
    main()
