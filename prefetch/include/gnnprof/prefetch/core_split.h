// gnnprof/prefetch/core_split.h — how many threads compute gets while a CPU producer prefetches.
//
// Two ways to share the CPUs: every core for compute, the producer at background priority
// filling compute's serial gaps ("all"), or cores minus producers for compute, the producers on
// cores of their own ("split"). Which is faster depends on the machine: how compute scales with
// threads and what the producer's memory traffic costs it (docs/performance.md measured "all"
// 1.16x faster than no prefetching on one 2-core VM and 0.86x on another, where "split" gave
// 1.19x). GNNPROF_PREFETCH_THREADS: auto (a BlockTrial on the first prefetched iterations
// measures both and keeps the faster), all, or split.
//
//   gnnprof::prefetch::CoreSplit split(cores, workers, [](int n) { torch::set_num_threads(n); });
//   Prefetcher<MiniBatch> loader(produce, count, depth, workers, WorkerPriority::kBackground);
//   loader.set_core_split(&split);   // next() drives it; K = 0 (the baseline) leaves it alone
//
// The choice, with both arms' median iterations, goes to the profile's collector list as
// "prefetch-threads"; the counter "compute_threads" marks every switch on the timeline.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <gnnprof/block_trial.h>

namespace gnnprof::prefetch {

class CoreSplit {
 public:
  using SetThreads = std::function<void(int)>;
  enum class Mode { kAuto, kAll, kSplit };

  /// `cores`: the threads compute has today; `workers`: producer threads. Mode from
  /// GNNPROF_PREFETCH_THREADS unless given. With cores - workers < 1 there is nothing to split:
  /// compute keeps every core.
  CoreSplit(int cores, int workers, SetThreads set_threads, std::optional<Mode> mode = std::nullopt);

  /// At each prefetched iteration's start, on the loop thread (Prefetcher::next calls it).
  void on_iteration(std::uint64_t now_ns);
  /// The time since the last call was no iteration (an epoch's end).
  void restart() { trial_.restart(); }
  /// No producer runs now (its epoch's batches are all handed out): compute gets every core
  /// until the next on_iteration().
  void idle();

  /// Compute's threads now.
  int threads() const { return threads_; }
  bool decided() const { return trial_.decided(); }
  int all_threads() const { return all_; }
  int split_threads() const { return split_; }
  /// One line: the choice and what it rests on.
  std::string describe() const;

  static std::optional<Mode> parse_mode(const std::string& text);

 private:
  void set(int threads);
  void report();

  int all_, split_;
  Mode mode_;
  SetThreads set_threads_;
  BlockTrial trial_;
  int threads_;
  int arm_ = 0;  // 0: all cores, 1: split
  bool started_ = false;
  bool reported_ = false;
};

}  // namespace gnnprof::prefetch
