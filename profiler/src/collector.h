// collector.h — session state flag and the registry of per-thread buffers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "thread_buffer.h"

namespace gnnprof::detail {

/// kForwarding: this copy of the core records nothing; the preload's session in the same
/// process records its events (linked_forward.h).
enum SessionState : int { kUninit = 0, kRunning = 1, kStopped = 2, kDisabled = 3, kForwarding = 4 };

/// Read on every hot-path call (relaxed): events are written only while kRunning.
extern std::atomic<int> g_state;

/// Owns every ThreadBuffer for the life of the process (never freed: a late thread or an
/// atexit handler may still touch its buffer). A buffer whose thread exited and whose events
/// were all drained is reused by the next new thread, so thread churn does not grow memory.
/// At most max_threads threads own a ring at once; further threads get the sink.
class BufferRegistry {
 public:
  /// Buffer for the calling thread: a new or reused ring, or the sink when the cap is reached.
  ThreadBuffer* attach_current_thread() noexcept;
  /// A ring owned by no thread (a lane), named; never retired or reused. nullptr on failure.
  ThreadBuffer* add_lane(const char* name) noexcept;
  /// Applies to buffers created after the call.
  void configure(std::size_t buffer_events, std::size_t max_threads) noexcept;
  std::mutex& mutex() { return mu_; }
  /// Under mutex(): all buffers (not the sink).
  const std::vector<std::unique_ptr<ThreadBuffer>>& buffers() const { return buffers_; }
  ThreadBuffer& sink() { return sink_; }
  std::uint32_t threads_seen() const noexcept { return next_index_; }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
  ThreadBuffer sink_{0};
  std::size_t buffer_events_ = 4096;
  std::size_t max_threads_ = 256;
  std::uint32_t next_index_ = 0;
};

BufferRegistry& buffer_registry();

/// The calling thread's buffer, or nullptr when no session runs (starts one lazily).
ThreadBuffer* current_buffer() noexcept;

/// Names the calling thread: its buffer's name now, or, before it has one, when it attaches
/// (a thread that never records takes no buffer for it).
void name_current_thread(const char* name) noexcept;

/// Forgets the calling thread's open stages and lines without ending them: in a fork child, the
/// ranges its parent had open there never end.
void forget_open_ranges() noexcept;

/// The calling thread's index in the profile (attaching a buffer if needed), or -1.
int current_thread_index() noexcept;

/// Implemented in session.cpp: starts a session from the environment if none was configured.
void lazy_start() noexcept;

}  // namespace gnnprof::detail
