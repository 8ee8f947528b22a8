// gnnprof/prefetch/prefetcher.h — run a batch producer up to K batches ahead of the loop.
//
// The producer is any callable `Batch(std::int64_t index)` (sample -> materialize -> h2d in
// the sample). With K = 0 it runs inline on the consumer's thread: the synchronous baseline,
// the same code, so an A/B differs only by overlap. With K >= 1, worker thread(s) produce
// batches index order ahead while the loop computes; next() hands them out in order.
//
//   gnnprof::prefetch::Prefetcher<MiniBatch> pf(
//       [&](std::int64_t i) { return producer.produce(epoch, i); }, batches,
//       gnnprof::prefetch::resolve_depth(2));        // GNNPROF_PREFETCH overrides the 2
//   while (auto mb = pf.next()) train_step(*mb);
//
// Guarantees (tests/prefetch/prefetcher_test.cpp):
//   - at most K batches in flight (produced or being produced, not yet taken by next());
//   - batches come out in index order, identical for every K;
//   - an exception thrown by the producer for batch i is rethrown by the next() that would
//     have returned batch i, after batches < i were delivered; next() then returns nullopt;
//   - the destructor stops the workers and joins them, also mid-epoch (a batch being produced
//     is finished first: the producer is never interrupted);
//   - one Prefetcher per epoch: constructing the next one restarts cleanly.
//
// Self-profiling: "loader_wait" (category data) is the consumer's wait for a batch, i.e. the
// data time exposed on the critical path; the producer's own stages run on threads named
// "prefetch-N" ("prefetch-idle-N" at background priority): hidden data time;
// "prefetch_queue_depth" counts ready batches at each next().
#pragma once

#include <gnnprof/gnnprof.h>
#include <gnnprof/prefetch/core_split.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gnnprof::prefetch {

/// Largest accepted K (GNNPROF_PREFETCH and the constructor clamp to it).
inline constexpr int kMaxDepth = 64;

/// K from GNNPROF_PREFETCH when it is set, else `code_default`. A value that is not an integer
/// in 0..kMaxDepth prints one warning on stderr and yields `code_default`.
int resolve_depth(int code_default) noexcept;

/// Parses a GNNPROF_PREFETCH value; nullopt when it is not an integer in 0..kMaxDepth.
std::optional<int> parse_depth(const char* text) noexcept;

/// Scheduling of the producer threads.
///  kNormal:     the same priority as the training thread.
///  kBackground: SCHED_IDLE on Linux: a producer runs only on a core nothing else wants. On a
///               machine whose cores the compute already keeps busy (CPU training on 2 cores)
///               this keeps the producer from preempting the compute threads and stalling
///               their OpenMP barriers; the producer fills the gaps of the compute's serial
///               sections instead. docs/performance.md has the measurements.
enum class WorkerPriority { kNormal, kBackground };

/// Puts the calling thread in SCHED_IDLE (Linux); returns false where that is not possible.
bool set_background_priority() noexcept;

template <typename Batch>
class Prefetcher {
 public:
  using Producer = std::function<Batch(std::int64_t)>;

  /// Produces batches 0 .. count-1 with up to `depth` in flight on `workers` threads.
  Prefetcher(Producer produce, std::int64_t count, int depth, int workers = 1,
             WorkerPriority priority = WorkerPriority::kNormal)
      : produce_(std::move(produce)),
        count_(count < 0 ? 0 : count),
        depth_(depth < 0 ? 0 : (depth > kMaxDepth ? kMaxDepth : depth)),
        priority_(priority) {
    if (depth_ == 0) return;
    slots_.resize(static_cast<std::size_t>(depth_));
    const int n = workers < 1 ? 1 : workers;
    for (int w = 0; w < n; ++w) workers_.emplace_back([this, w] { work(w); });
  }

  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    can_produce_.notify_all();
    for (auto& t : workers_) t.join();
    if (split_ != nullptr && split_started_) split_->idle();  // left early (break, an exception): compute's threads back
  }

  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// The next batch in index order; nullopt after the last one (or after a producer error was
  /// rethrown). With K = 0 the producer runs here, inline.
  std::optional<Batch> next() {
    if (failed_ || next_consume_ >= count_) return std::nullopt;
    if (depth_ == 0) {
      const std::int64_t i = next_consume_++;
      try {
        return produce_(i);
      } catch (...) {
        failed_ = true;
        throw;
      }
    }
    if (split_ != nullptr) {
      if (!split_started_) split_->restart();  // the time since the last epoch's loop is no iteration
      split_started_ = true;
      split_->on_iteration(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count()));
    }
    GNNPROF_STAGE("loader_wait");
    std::unique_lock<std::mutex> lock(mu_);
    Slot& s = slots_[static_cast<std::size_t>(next_consume_ % depth_)];
    can_consume_.wait(lock, [&] { return s.ready; });
    GNNPROF_COUNTER("prefetch_queue_depth", ready_);
    --ready_;
    ++next_consume_;
    s.ready = false;
    std::optional<Batch> out = std::move(s.value);
    std::exception_ptr error = s.error;
    s.value.reset();
    s.error = nullptr;
    lock.unlock();
    if (split_ != nullptr && next_consume_ >= count_) split_->idle();  // no producer runs from here on
    can_produce_.notify_all();
    if (error) {
      failed_ = true;
      std::rethrow_exception(error);
    }
    return out;
  }

  /// Compute's threads while this prefetcher's producers run (core_split.h); next() drives it
  /// at each batch. Not used at K = 0: the baseline keeps compute as it is. Set before the
  /// first next(); the CoreSplit outlives the epochs it serves.
  void set_core_split(CoreSplit* split) noexcept { split_ = split; }

  int depth() const noexcept { return depth_; }
  std::int64_t count() const noexcept { return count_; }
  /// Largest number of batches ever in flight (produced or being produced, not yet taken).
  std::int64_t max_in_flight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return max_in_flight_;
  }

 private:
  struct Slot {
    bool ready = false;
    std::optional<Batch> value;
    std::exception_ptr error;
  };

  void work(int worker) {
    // "prefetch-idle-N" when at background priority: the thread-oversubscription diagnostic
    // counts only producers that compete with compute at normal priority.
    const bool background = priority_ == WorkerPriority::kBackground && set_background_priority();
    gnnprof::set_thread_name(((background ? "prefetch-idle-" : "prefetch-") + std::to_string(worker)).c_str());
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      // Backpressure: batch i may start only while fewer than K batches are in flight.
      can_produce_.wait(lock, [&] {
        return stop_ || producer_failed_ || next_produce_ >= count_ || next_produce_ < next_consume_ + depth_;
      });
      if (stop_ || producer_failed_ || next_produce_ >= count_) return;
      const std::int64_t i = next_produce_++;
      if (next_produce_ - next_consume_ > max_in_flight_) max_in_flight_ = next_produce_ - next_consume_;
      lock.unlock();
      std::optional<Batch> value;
      std::exception_ptr error;
      try {
        value.emplace(produce_(i));
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      Slot& s = slots_[static_cast<std::size_t>(i % depth_)];
      s.value = std::move(value);
      s.error = error;
      s.ready = true;
      ++ready_;
      if (error) producer_failed_ = true;  // later batches are not produced
      can_consume_.notify_all();
    }
  }

  Producer produce_;
  const std::int64_t count_;
  const int depth_;
  const WorkerPriority priority_;
  // Consumer-only state (next() is called from one thread).
  bool failed_ = false;
  CoreSplit* split_ = nullptr;
  bool split_started_ = false;
  // Shared state, guarded by mu_. Slot i % K belongs to batch i: with at most K in flight no
  // two live batches share a slot.
  mutable std::mutex mu_;
  std::condition_variable can_produce_, can_consume_;
  std::vector<Slot> slots_;
  std::int64_t next_produce_ = 0;
  std::int64_t next_consume_ = 0;
  std::int64_t ready_ = 0;
  std::int64_t max_in_flight_ = 0;
  bool stop_ = false;
  bool producer_failed_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace gnnprof::prefetch
