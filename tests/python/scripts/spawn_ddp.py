"""Two DDP ranks started by torch.multiprocessing.spawn (as PyG's and DGL's multi-GPU examples
start theirs), Gloo on CPU: no RANK in their environment; init_process_group gives each its rank.

usage: spawn_ddp.py STEPS [SETTLE_S]: each rank runs an op and waits SETTLE_S before joining the
group (a periodic flush then writes its profile under the rankless name first)."""
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, port, steps, settle):
    torch.ones(8).sum()
    time.sleep(settle)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x, y = torch.randn(64, 32), torch.randint(0, 4, (64,))
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    dist.destroy_process_group()
    print(f"rank {rank} steps {steps}")


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(run, args=(2, port, int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0.0), nprocs=2)
