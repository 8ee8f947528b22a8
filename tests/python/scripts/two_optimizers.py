"""Learned node embeddings (a sparse nn.Embedding, stepped by SparseAdam) and a dense model
(Adam): two optimizer steps per pass of the loop, as in GNN examples with learnable node
features. No gnnprof import, no record_function. With --same-class both are Adam (the
embeddings dense, an encoder/decoder split): two steps of one optimizer class per pass.

usage: two_optimizers.py STEPS [--same-class]"""
import sys

import torch


def main(steps, same_class):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10000, 64, sparse=not same_class)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    emb_optimizer = torch.optim.Adam if same_class else torch.optim.SparseAdam
    opt_sparse = emb_optimizer(list(emb.parameters()), lr=0.01)
    opt_dense = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(steps):
        nodes = torch.randint(0, 10000, (512,))
        y = nodes % 2
        loss = torch.nn.functional.cross_entropy(model(emb(nodes)), y)
        opt_sparse.zero_grad()
        opt_dense.zero_grad()
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
    print("loss", round(loss.item(), 1))


if __name__ == "__main__":
    main(int(sys.argv[1]), "--same-class" in sys.argv[2:])
