"""The training loop in a process of its own (torch.multiprocessing.spawn, as DDP scripts start
their ranks), its DataLoader's worker started by spawn: the launched process records nothing.

usage: spawned_loop.py BATCHES"""
import sys

import torch.multiprocessing as mp

import slow_workers


def rank(_, batches):
    sys.argv = ["slow_workers.py", str(batches), "1", "1", "spawn"]
    slow_workers.main()


if __name__ == "__main__":
    mp.spawn(rank, args=(int(sys.argv[1]),), nprocs=1)
