"""Inference over a DataLoader, three passes with a pause after each (no optimizer, no gnnprof
import): each batch is an iteration, and the pauses are in none."""
import time

import torch


def main():
    model = torch.nn.Linear(32, 4)
    ds = torch.utils.data.TensorDataset(torch.randn(512, 32))
    for _ in range(3):
        with torch.no_grad():
            for (x,) in torch.utils.data.DataLoader(ds, batch_size=64):
                model(x).argmax(1)
                time.sleep(0.002)
        time.sleep(0.05)
    print("done")


if __name__ == "__main__":
    main()
