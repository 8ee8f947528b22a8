"""Moving batches to a device ahead of the loop: one side stream and one staging ring per
prefetcher, for its whole life (docs/architecture.md, "Staging ring").

The design (the same as the C++ one in prefetch/include/gnnprof/prefetch/staging_ring.h):

* A ring of N = depth + 1 slots, used round robin. A slot holds the pinned host buffers a
  batch's tensors are staged in (allocated once, reused while the shapes fit) and the device
  buffers of the stand-in device.
* The producer acquires the next slot, stages the batch's host tensors into its buffers,
  queues the copies on the side stream and records an event after them.
* A slot is handed to the producer again only when (a) the copy that last read its buffers has
  completed (its event) and (b) the consumer has released what it read from it: a buffer is
  never overwritten while its copy or its consumer may still use it. On CUDA, device memory
  comes from torch's caching allocator, so (b) is `record_stream` on the consumer's stream
  instead, and only host staging buffers live in the ring.
* The consumer's stream waits on the batch's event before it uses the batch.

Devices implement a small interface (`Device`) so that the ring's ordering and lifetime logic is
tested here with a CPU stand-in that copies on its own thread (ThreadCopyDevice), and runs on
CUDA through CudaDevice (torch's documented stream, event and pinned-memory API).
"""
import threading


class Slot:
    __slots__ = ("index", "buffers", "copy_done", "released", "keep")

    def __init__(self, index):
        self.index = index
        self.buffers = {}      # position in the batch -> staging (and stand-in device) buffers
        self.copy_done = None  # the device's event after this slot's copies, or None
        self.released = True   # the consumer is done with what it read from this slot
        self.keep = ()         # host tensors the queued copies still read (kept alive until done)


class StagingRing:
    """N slots, used round robin; acquire() waits until the slot's previous use is over."""

    def __init__(self, device, slots):
        self.device = device
        self.slots = [Slot(i) for i in range(max(1, slots))]
        self._next = 0
        self._cv = threading.Condition()

    def acquire(self):
        """The next slot for the producer, once its last copy completed and the consumer
        released it. Blocks (the producer thread) without a time limit."""
        slot = self.slots[self._next]
        self._next = (self._next + 1) % len(self.slots)
        with self._cv:
            self._cv.wait_for(lambda: slot.released)
        if slot.copy_done is not None:
            self.device.wait_host(slot.copy_done)
            slot.copy_done = None
        slot.keep = ()
        slot.released = False
        return slot

    def release(self, slot):
        """The consumer is done with the batch staged in `slot` (it took the next one, or the
        epoch ended)."""
        with self._cv:
            slot.released = True
            self._cv.notify_all()

    def release_all(self):
        with self._cv:
            for s in self.slots:
                s.released = True
            self._cv.notify_all()


class HostData(list):
    """A stand-in host tensor (a list) for ThreadCopyDevice."""


class Device:
    """What the staging logic needs of a device. Tensors are whatever the device moves."""

    streams_created = 0
    buffers_allocated = 0
    target = None  # what objects with a .to() method are moved to, or None

    def is_tensor(self, obj):
        """Whether `obj` is a host tensor this device stages."""
        raise NotImplementedError

    def side_stream(self):
        """A context manager in which objects' own .to() run on the side stream."""
        import contextlib
        return contextlib.nullcontext()

    def begin(self, slot):
        """Before a batch's copies: the side stream waits for what the consumer released."""

    def released(self, tensors):
        """The consumer took the next batch: it is done queueing work on these."""

    def stage(self, slot, pos, tensor):
        """Queues the copy of `tensor` through slot's buffer `pos`; returns the device tensor."""
        raise NotImplementedError

    def record(self, slot):
        """An event after every copy queued for `slot` so far."""
        raise NotImplementedError

    def wait_host(self, event):
        """Blocks the calling (producer) thread until `event` completed."""
        raise NotImplementedError

    def wait_consumer(self, event, tensors):
        """Makes the consumer's stream wait for `event` and marks `tensors` as used there."""
        raise NotImplementedError


class CudaDevice(Device):
    """One side stream for the prefetcher's life; pinned staging buffers in the ring's slots,
    reused while a tensor of the same dtype fits; device memory from the caching allocator,
    protected with record_stream on the consumer's stream."""

    def __init__(self, device):
        import torch
        self.torch = torch
        self.device = torch.device(device)
        self.target = self.device
        self.stream = torch.cuda.Stream(device=self.device)
        self.streams_created = 1
        self.buffers_allocated = 0
        self.bytes_staged = 0
        self._release = None  # an event on the consumer's stream after its last released batch
        self._lock = threading.Lock()

    def is_tensor(self, obj):
        return isinstance(obj, self.torch.Tensor) and obj.device.type == "cpu"

    def side_stream(self):
        return self.torch.cuda.stream(self.stream)

    def begin(self, slot):
        # Memory the caching allocator hands out here may be what the consumer released; its
        # kernels may still be queued on the consumer's stream: the side stream waits for them.
        # (record_stream covers our own tensors; this covers objects moved by their own .to().)
        with self._lock:
            ev = self._release
        if ev is not None:
            self.stream.wait_event(ev)

    def released(self, tensors):
        ev = self.torch.cuda.Event()
        ev.record(self.torch.cuda.current_stream(self.device))
        with self._lock:
            self._release = ev

    def stage(self, slot, pos, t):
        torch = self.torch
        src = t
        if not t.is_pinned():
            n = t.numel()
            buf = slot.buffers.get(pos)
            if buf is None or buf.dtype != t.dtype or buf.numel() < n:
                buf = torch.empty(max(n, 1), dtype=t.dtype, pin_memory=True)
                slot.buffers[pos] = buf
                self.buffers_allocated += 1
            src = buf[:n].view(t.shape)
            src.copy_(t)
        slot.keep = slot.keep + (src,)
        with torch.cuda.stream(self.stream):
            out = torch.empty(t.shape, dtype=t.dtype, device=self.device)
            out.copy_(src, non_blocking=True)
        self.bytes_staged += t.numel() * t.element_size()
        return out

    def record(self, slot):
        ev = self.torch.cuda.Event()
        ev.record(self.stream)
        return ev

    def wait_host(self, event):
        event.synchronize()

    def wait_consumer(self, event, tensors):
        current = self.torch.cuda.current_stream(self.device)
        current.wait_event(event)
        for t in tensors:
            t.record_stream(current)


class _StandInEvent:
    def __init__(self):
        self.done = threading.Event()


class ThreadCopyDevice(Device):
    """A CPU stand-in: "device" buffers are plain Python lists in the slots, copies run on a
    thread of the device's own with a delay, events are set when they finish. It checks the
    ring's promise: a staging or device buffer is never written while a copy or the consumer
    may still use it (violations counted)."""

    def __init__(self, delay=0.0):
        import queue
        self.delay = delay
        self.target = "standin"
        self.streams_created = 1
        self.buffers_allocated = 0
        self.violations = 0
        self._jobs = queue.Queue()
        self._busy = set()       # (slot, pos) of buffers a queued copy reads or writes
        self._held = set()       # (slot, pos) of device buffers the consumer holds
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="standin-copy", daemon=True)
        self._thread.start()

    def _run(self):
        import time
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if callable(job):
                job()
                continue
            key, host, dev = job
            if self.delay:
                time.sleep(self.delay)
            dev[:] = host
            with self._lock:
                self._busy.discard(key)

    def is_tensor(self, obj):
        return isinstance(obj, HostData)

    def released(self, tensors):
        with self._lock:
            for t in tensors:
                self._held.discard(t.key)

    def stage(self, slot, pos, data):
        key = (slot.index, pos)
        with self._lock:
            if key in self._busy or key in self._held:
                self.violations += 1
            self._busy.add(key)
        bufs = slot.buffers.get(pos)
        if bufs is None or len(bufs[0]) != len(data):
            bufs = slot.buffers[pos] = ([None] * len(data), [None] * len(data))
            self.buffers_allocated += 1
        host, dev = bufs
        host[:] = data  # "pinning": the staging copy the producer makes
        self._jobs.put((key, host, dev))
        return _DeviceView(dev, key)

    def record(self, slot):
        ev = _StandInEvent()
        self._jobs.put(ev.done.set)
        return ev

    def wait_host(self, event):
        event.done.wait()

    def wait_consumer(self, event, tensors):
        event.done.wait()
        with self._lock:
            for t in tensors:
                self._held.add(t.key)

    def close(self):
        self._jobs.put(None)
        self._thread.join()


class _DeviceView(list):
    """A stand-in device tensor: the device buffer's contents at hand-over, and its slot."""

    def __init__(self, dev, key):
        super().__init__()
        self._dev = dev
        self.key = key

    def read(self):
        return list(self._dev)
