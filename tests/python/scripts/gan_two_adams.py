"""A GAN as tutorials write it: a discriminator and a generator, each with its own Adam (one
optimizer class), stepped at two points of each pass with work between. No gnnprof import.

usage: gan_two_adams.py STEPS"""
import sys

import torch


def main(steps):
    torch.manual_seed(0)
    gen = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))
    disc = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.LeakyReLU(0.2), torch.nn.Linear(64, 1))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4)
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4)
    bce = torch.nn.BCEWithLogitsLoss()
    for _ in range(steps):
        real = torch.randn(256, 32)
        fake = gen(torch.randn(256, 16))
        opt_d.zero_grad()
        loss_d = bce(disc(real), torch.ones(256, 1)) + bce(disc(fake.detach()), torch.zeros(256, 1))
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_g = bce(disc(fake), torch.ones(256, 1))
        loss_g.backward()
        opt_g.step()
    print("done", steps)


if __name__ == "__main__":
    main(int(sys.argv[1]))
