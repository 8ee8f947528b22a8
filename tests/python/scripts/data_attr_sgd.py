"""A makemore-shaped loop: the parameters a list of leaf tensors, no module, no optimizer, no
DataLoader, updated through `.data` with grad enabled. argv: steps, then "iadd"
(`p.data += -lr * p.grad`) or "sub_" (`p.data.sub_(lr * p.grad)`). Prints the last loss."""
import sys

import torch

steps, form = int(sys.argv[1]), sys.argv[2]
g = torch.Generator().manual_seed(0)
X = torch.randint(0, 27, (4096, 3), generator=g)
Y = torch.randint(0, 27, (4096,), generator=g)
C = torch.randn((27, 10), generator=g)
W1 = torch.randn((30, 64), generator=g)
b1 = torch.randn(64, generator=g)
W2 = torch.randn((64, 27), generator=g)
b2 = torch.randn(27, generator=g)
parameters = [C, W1, b1, W2, b2]
for p in parameters:
    p.requires_grad = True


def train(lr=0.1):
    for i in range(steps):
        ix = torch.randint(0, X.shape[0], (32,), generator=g)
        emb = C[X[ix]]
        h = torch.tanh(emb.view(-1, 30) @ W1 + b1)
        loss = torch.nn.functional.cross_entropy(h @ W2 + b2, Y[ix])
        for p in parameters:
            p.grad = None
        loss.backward()
        for p in parameters:
            if form == "iadd":
                p.data += -lr * p.grad
            else:
                p.data.sub_(lr * p.grad)
    return loss.item()


print(f"loss {train():.4f}")
