"""Training in a threading.Thread while the main thread waits for it (a service, a watchdog):
no gnnprof import. The model is built on the main thread, whose last torch work is the
parameters' initialisation, or, with --sanity, a forward with grad (a shape check, a lazy
module's set-up). With --poll, the training runs in a ThreadPoolExecutor and the main thread
polls its future every 20 ms (a watchdog)."""
import sys
import threading
import time

import torch
import torch.nn.functional as F


def train(model, opt, steps, out):
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x = torch.randn(256, 64, generator=gen)
        y = torch.randint(0, 8, (256,), generator=gen)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.004)
    out.append(loss.item())


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    if "--sanity" in sys.argv:
        print(f"out {tuple(model(torch.randn(4, 64)).shape)}")
    out = []
    if "--poll" in sys.argv:
        from concurrent.futures import ThreadPoolExecutor, TimeoutError
        with ThreadPoolExecutor(1, thread_name_prefix="trainer") as pool:
            future = pool.submit(train, model, opt, steps, out)
            while True:
                try:
                    future.result(timeout=0.02)
                    break
                except TimeoutError:
                    pass
    else:
        t = threading.Thread(target=train, args=(model, opt, steps, out), name="trainer")
        t.start()
        t.join()
    print(f"loss {out[0]:.4f}")


if __name__ == "__main__":
    main()
