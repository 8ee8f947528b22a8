// gnnprof/prefetch/staging_ring.h — reusable host staging buffers for copies to a device,
// never overwritten while a copy or the consumer may still use them.
//
// The design is the Python prefetcher's too (python/gnnprof/_staging.py; docs/architecture.md,
// "Staging ring"): N slots used round robin, each holding the buffers one batch is staged in;
// the producer acquires the next slot, stages the batch, queues the copies on the device's copy
// stream and records an event after them (copied()); the slot is handed out again only once
// that event completed and the consumer released what it read from the slot. On CUDA the
// consumer reads device memory from torch's caching allocator, which record_stream protects,
// so it releases a slot as soon as the batch is handed over; a device whose consumer reads the
// ring's own buffers (the tests' stand-in) releases it when it is done.
//
//   gnnprof::prefetch::StagingRing ring(device, depth + 1);
//   const std::size_t slot = ring.acquire();   // producer: blocks until the slot is free
//   ... stage tensors into slot's buffers, queue copies on the copy stream ...
//   const std::uint64_t event = ring.copied(slot);
//   ... consumer waits for `event` on its stream, uses the batch ...
//   ring.release(slot);
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace gnnprof::prefetch {

/// What a StagingRing needs of a device: events on its copy stream.
class StagingDevice {
 public:
  virtual ~StagingDevice() = default;
  /// Records an event after every copy queued so far on the copy stream; returns its token.
  virtual std::uint64_t record() = 0;
  /// Blocks the calling thread until the event `token` completed (and forgets it).
  virtual void wait_host(std::uint64_t token) = 0;
};

class StagingRing {
 public:
  /// `slots` >= 1; a prefetcher of depth K needs K + 1 (K in flight, one with the consumer).
  StagingRing(StagingDevice& device, std::size_t slots);

  /// The next slot, round robin, once the copy that last read it completed and the consumer
  /// released it. Blocks without a time limit; safe from several producer threads.
  std::size_t acquire();
  /// The copies of `slot`'s batch are queued: records their event and returns its token.
  std::uint64_t copied(std::size_t slot);
  /// The consumer no longer uses what it read from `slot`.
  void release(std::size_t slot);
  /// Every slot released (the prefetcher stops).
  void release_all();
  std::size_t size() const noexcept { return slots_.size(); }

 private:
  struct Slot {
    bool released = true;
    bool pending = false;      // `event` is a copy not yet waited for
    std::uint64_t event = 0;
  };
  StagingDevice& device_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  std::size_t next_ = 0;
};

}  // namespace gnnprof::prefetch
