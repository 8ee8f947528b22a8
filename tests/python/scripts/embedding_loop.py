"""Learnable node embeddings (a featureless graph's, node2vec's) trained with a mini-batch loop:
each batch looks up a few rows of a large nn.Embedding. MODE dense: the embedding's gradient is a
dense table and Adam updates every row each step; sparse: nn.Embedding(sparse=True) with
torch.optim.SparseAdam for it (Adam for the rest), which update only the rows looked up.

usage: embedding_loop.py [dense|sparse] [STEPS]"""
import sys

import torch
import torch.nn.functional as F

NODES, DIM, BATCH = 400000, 32, 512


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "dense"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    torch.manual_seed(0)
    emb = torch.nn.Embedding(NODES, DIM, sparse=mode == "sparse")
    head = torch.nn.Linear(DIM, 8)
    if mode == "sparse":
        opts = [torch.optim.SparseAdam(emb.parameters(), lr=0.01), torch.optim.Adam(head.parameters(), lr=0.01)]
    else:
        opts = [torch.optim.Adam(list(emb.parameters()) + list(head.parameters()), lr=0.01)]
    labels = torch.randint(0, 8, (NODES,))
    total = 0.0
    for step in range(steps):
        ids = torch.randint(0, NODES, (BATCH,))
        for o in opts:
            o.zero_grad()
        loss = F.cross_entropy(head(emb(ids)), labels[ids])
        loss.backward()
        for o in opts:
            o.step()
        total += float(loss)
    print(f"loss {total / steps:.4f}")


if __name__ == "__main__":
    main()
