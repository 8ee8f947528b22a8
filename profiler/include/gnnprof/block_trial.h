// gnnprof/block_trial.h — tries a few settings ("arms") on a loop's own iterations and keeps
// the fastest. The prefetch runtime uses it to choose how many threads compute gets while a
// producer prepares batches on the same CPUs (gnnprof/prefetch/core_split.h; Python:
// gnnprof.prefetch), where the answer depends on the machine.
//
// Schedule: `warmup` iterations on arm 0, then `rounds` rounds in which every arm runs one
// block of `block` iterations, arms alternating (A B A B: a drift in the machine's speed hits
// every arm). The first iteration of each block is not measured (it carries the switch). Then
// the arm with the lowest median iteration wins; arm 0 (the default) stays unless another is
// faster by more than `min_gain`. No clock of its own: the caller passes the time.
#pragma once

#include <cstdint>
#include <vector>

namespace gnnprof {

class BlockTrial {
 public:
  struct Options {
    int arms = 2;
    int warmup = 2;
    int block = 4;
    int rounds = 2;
    double min_gain = 0.02;
  };

  explicit BlockTrial(Options o);

  /// At the start of each iteration, with the time now. Returns the arm to switch to from this
  /// iteration on, or -1 when the arm stays.
  int on_iteration(std::uint64_t now_ns);
  /// The interval since the last on_iteration() was not an iteration (an epoch's end, an
  /// evaluation): it is not measured.
  /// The interval after it is not measured either (a cold pipeline's first batch).
  void restart() {
    have_last_ = false;
    skip_ = true;
  }

  bool decided() const { return decided_; }
  /// The arm running now; once decided(), the chosen one.
  int current() const { return current_; }
  int arms() const { return static_cast<int>(times_.size()); }
  /// Median measured iteration of an arm in ns (0 while none was measured), and how many.
  std::uint64_t median_ns(int arm) const;
  std::size_t measured(int arm) const { return times_.at(static_cast<std::size_t>(arm)).size(); }
  /// Iterations the trial takes before it decides.
  int length() const { return opt_.warmup + opt_.rounds * arms() * opt_.block; }

 private:
  void decide();

  Options opt_;
  std::vector<std::vector<std::uint64_t>> times_;
  std::uint64_t last_ = 0;
  bool have_last_ = false;
  bool measure_last_ = false;  // whether the interval ending at the next call is measured
  int iteration_ = 0;          // on_iteration() calls so far
  int current_ = 0;
  bool decided_ = false;
  bool skip_ = false;  // restart(): the next interval is not measured
};

}  // namespace gnnprof
