// thread_buffer.h — one thread's append-only event ring plus its open-range stack.
//
// Single producer (the owning thread) and single consumer (the drainer, under the drain
// mutex): the shape of folly's ProducerConsumerQueue. The producer keeps its own head and a
// cached copy of the consumer's tail, so a warm append touches only this thread's cache lines
// and does no locked instruction: write the slot, then publish head with a release store
// (a plain mov on x86). The consumer acquires head, reads the slots, and releases tail so the
// producer may reuse them. A full ring drops the new event and counts it; it never blocks
// and never allocates. The ring is its own anonymous mapping, not a malloc block: a
// long-lived block of hundreds of KB in the host's heap would change how the host's own
// allocations fit (docs/performance.md, "Whose page faults?").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "raw_event.h"

namespace gnnprof::detail {

/// Deepest nesting of open stages+lines per thread; deeper ranges are dropped and counted.
inline constexpr int kMaxDepth = 64;

struct OpenRange {
  std::uint64_t begin;
  std::uint64_t child_ticks;  // time in directly nested stages (stages only)
  std::uint32_t site;         // 0: transparent entry (records nothing)
  std::int16_t prev_stage;    // index of the enclosing stage entry, -1 if none
  std::int16_t prev_line;     // index of the enclosing line entry, -1 if none
  std::uint16_t stage_depth;  // number of enclosing stages
  bool is_line;
  bool repeated;  // a stage of the same site is open further out (recursion)
};

/// Unmaps a ring made by ThreadBuffer's constructor.
struct RingUnmap {
  std::size_t bytes = 0;
  void operator()(RawEvent* p) const noexcept;
};

class ThreadBuffer {
 public:
  /// capacity 0 makes a sink: every event is dropped and counted (threads over the cap).
  /// Throws std::bad_alloc when the ring cannot be mapped.
  explicit ThreadBuffer(std::size_t capacity);

  bool is_sink() const noexcept { return capacity_ == 0; }
  std::size_t capacity() const noexcept { return capacity_; }

  /// Producer: a slot to fill, or nullptr (counted as dropped) when the ring is full.
  RawEvent* reserve() noexcept {
    if (__builtin_expect(head_local_ - tail_cache_ >= capacity_, 0)) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head_local_ - tail_cache_ >= capacity_) {
        count_drop();
        return nullptr;
      }
    }
    return &ring_[head_local_ & mask_];
  }
  /// Producer: publishes the slot returned by reserve().
  void commit() noexcept {
    ++head_local_;
    head_.store(head_local_, std::memory_order_release);
  }
  void count_drop() noexcept { dropped_.fetch_add(1, std::memory_order_relaxed); }

  // Consumer side.
  std::uint64_t published() const noexcept { return head_.load(std::memory_order_acquire); }
  std::uint64_t consumed() const noexcept { return tail_.load(std::memory_order_relaxed); }
  const RawEvent& at(std::uint64_t i) const noexcept { return ring_[i & mask_]; }
  void release_to(std::uint64_t i) noexcept { tail_.store(i, std::memory_order_release); }
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

  // Producer-owned state, first so that a warm begin/end touches one cache line of it
  // plus the stack entry and the ring slot.
  int depth = 0;          // open entries, may exceed kMaxDepth (those are not stored)
  int cur_stage = -1;     // stack index of the innermost stage, -1 if none
  int cur_line = -1;      // stack index of the innermost line, -1 if none
  int stage_depth = 0;    // open stages (lines excluded)
  int top_stage = -1;     // stack index of the outermost open stage, -1 if none
  // The line an outside tracer (Python's, gnnprof_set_line) made current, 0 if none, and the
  // raw time it became current: instant events outside every GNNPROF_LINE are stamped with
  // it, and the outermost stage's time is split between such lines (kLineStage).
  std::uint32_t ext_line = 0;
  std::uint64_t ext_line_since = 0;
  void (*line_watch)() = nullptr;  // gnnprof_watch_next_line: fired once by set_line
  // While line_watch runs: the line change's time, at which the stages it ends end (not when
  // the watcher got to them: a preemption there is the new line's own time), 0 otherwise.
  std::uint64_t end_at = 0;

 private:
  std::size_t capacity_;
  std::uint64_t mask_;
  std::unique_ptr<RawEvent[], RingUnmap> ring_;
  std::uint64_t head_local_ = 0;  // producer's copy of head_
  std::uint64_t tail_cache_ = 0;  // producer's last view of tail_

 public:
  OpenRange stack[kMaxDepth];

  // Owner identity; written under the registry mutex, read by the drainer under it.
  // Drops are reported relative to dropped_base (set when a session starts or a new thread
  // takes the ring over); noted_dropped is what the drainer last handed to the aggregator, so
  // a ring is reused only once its owner's last drops are accounted for.
  std::uint64_t dropped_base = 0;
  std::uint64_t noted_dropped = 0;
  std::uint32_t index = 0;
  std::int64_t tid = 0;
  char name[32] = {0};
  std::atomic<bool> retired{false};

 private:
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  alignas(64) std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace gnnprof::detail
