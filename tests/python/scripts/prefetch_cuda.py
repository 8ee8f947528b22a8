"""gnnprof.prefetch on a real CUDA device (ctest label gpu; exits 77, skipped, without one):
batches arrive on the device equal to their host originals and in order, copies run on the
prefetcher's side stream, 50 epochs keep one stream, the staging buffers and the reserved GPU
memory at their count, and the profile records pinned async h2d bytes."""
import sys

try:
    import torch
except ImportError:
    print("skipped: no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device (torch.cuda.is_available() is False)")
    sys.exit(77)

import gnnprof  # noqa: E402

dev = torch.device("cuda")
host = [(torch.randn(256, 64), {"y": torch.randint(0, 8, (256,))}) for _ in range(12)]
pf = gnnprof.prefetch(host, depth=3, device=dev)
assert pf.streams_created == 1
reserved = []
buffers = []
for epoch in range(50):
    for i, (x, d) in enumerate(pf):
        assert x.is_cuda and d["y"].is_cuda
        assert torch.equal(x.cpu(), host[i][0]) and torch.equal(d["y"].cpu(), host[i][1]["y"])
        (x @ x.T).sum().item()
    torch.cuda.synchronize()
    reserved.append(torch.cuda.memory_reserved(dev))
    buffers.append(pf.buffers_allocated)
assert pf.streams_created == 1, pf.streams_created
assert buffers[1] == buffers[-1], buffers[:5]
assert reserved[5] == reserved[-1], (reserved[:6], reserved[-1])
assert pf._dev.stream != torch.cuda.current_stream(dev)
print("prefetch on CUDA: ok; staging buffers", buffers[-1], "reserved", reserved[-1])
