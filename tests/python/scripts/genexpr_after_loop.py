"""A loop that pulls batches from a generator, then joins its losses with a generator
expression: the generator is the data pipeline, the expression is not."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def batches():
    for _ in range(6):
        yield torch.randn(16, 8)
def main():
    times = []
    for x in batches():
        loss = model(x).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        times.append(loss.item())
    print(" ".join(f"{t:.2f}" for t in times))
main()
