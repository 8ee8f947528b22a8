// op_sampler.h — decides, at each iteration boundary, whether the torch observer observes ops
// in the next iteration (iteration sampling). No torch here; tests drive it with iteration
// walls and op counts (tests/instrument/op_sampler_test.cpp).
//
// Why: in torch 1.13 a global FUNCTION-scope RecordFunction callback makes every op build a
// RecordFunction (and every autograd node its demangled name), whatever the callback does:
// +25..40 % on a loop of few-microsecond ops (docs/performance.md). User scopes (record_function,
// Optimizer.step / zero_grad, ProfilerStep) stay observed in every iteration, so iterations and
// the program's own stages are exact; only the op-level detail (forward / backward phases,
// materializations, copies, comm waits) is sampled.
//
// Policy "auto" (the default):
//   1. warm-up: the first `warmup` iterations are observed;
//   2. density: if their ops, at `op_cost_ns` each, would cost less than `density_limit` of
//      the iteration (ops of tens of microseconds and more), every iteration is observed and
//      nothing more is measured: no iteration loses its detail;
//   3. calibration: otherwise `calibration_pairs` pairs of iterations alternate unobserved /
//      observed, and the cost is measured: the median over pairs of observed / unobserved - 1
//      (after 3 pairs when each of them cost over 4x the budget: a short run of per-element
//      tensor ops would otherwise spend most of its iterations at +300 %);
//   4. if that cost is at most `budget`, every iteration is observed, except that until
//      `verify_pairs` pairs are measured one iteration in `verify_every` stays unobserved and
//      pairs with the next: every `calibration_pairs` new pairs the cost is taken again over
//      all of them, and over `budget` switches to sampling (8 pairs on a loaded machine can
//      pass a +40 % observer for free). Otherwise one iteration in `period` =
//      ceil(cost / target) (2..max_period), so the cost spread over the run is about `target`.
// While sampling, observed and unobserved iterations keep being timed: every 64 iterations the
// period is recomputed from the cost measured so far, and the cost reported at the end is
// measured over the whole run (the last 1024 iterations of each kind).
// Which iteration of a block is observed (sampling), or left unobserved (verification), and the
// order within a calibration pair are drawn at random (a fixed-seed generator): a loop whose
// iterations repeat with a period (a DataLoader's N workers make a sawtooth of period N) would
// otherwise always be observed at the same phase, and its stage figures and the measured cost
// would be those of that phase.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gnnprof::instrument {

struct SamplerOptions {
  enum class Mode : std::uint8_t { kAuto, kAll, kEvery };
  Mode mode = Mode::kAuto;
  int period = 1;                // kEvery: observe one iteration in `period`
  int warmup = 5;                // observed iterations before anything is decided
  // Assumed cost of observing one op, torch's RecordFunction included (density check): the
  // sample's loop measured 3.6-5.1 us per observed op on the 2-core VM (docs/performance.md).
  double op_cost_ns = 4000;
  double density_limit = 0.03;   // below (the overhead target): observe every iteration, no calibration
  int calibration_pairs = 8;     // unobserved/observed pairs measured
  int verify_every = 16;         // within budget: one iteration in this many unobserved...
  int verify_pairs = 32;         // ...until this many pairs are measured in all
  double budget = 0.05;          // measured cost at most this: observe every iteration
  double target = 0.02;          // cost aimed at when sampling
  int max_period = 64;
  // Decide from the density estimate instead of measuring pairs (a DataLoader worker: its
  // batches, one epoch's share, are often fewer than the calibration needs).
  bool estimate = false;
  // > 0: start decided, one iteration in this many (an earlier worker's decision).
  int inherited_period = 0;
  // The draws' seed (which iteration of a block is observed). Fixed, so a run is repeatable;
  // each DataLoader worker gets its own, or all of them would observe the same batch index.
  std::uint64_t seed = 0;

  /// GNNPROF_TORCH_SAMPLE: "auto" (or unset/empty), "all", or N >= 1 (one iteration in N).
  /// Returns false (options unchanged) for anything else.
  bool parse(const char* value);
};

class OpSampler {
 public:
  explicit OpSampler(SamplerOptions opt);

  /// At an iteration boundary: `wall_ns` and `ops` (observed RecordFunctions) of the
  /// iteration that just ended (`first`: there was none, this mark begins the first).
  /// Returns whether ops are observed in the iteration that begins now.
  bool on_mark(bool first, std::int64_t wall_ns, std::uint64_t ops);

  /// 0 until decided; 1: every iteration observed; N: one in N.
  int period() const noexcept { return period_; }
  std::uint64_t iterations() const noexcept { return iterations_; }
  std::uint64_t observed_iterations() const noexcept { return observed_; }
  /// median(observed walls) / median(unobserved walls) - 1 over the run; < 0 when unmeasured.
  double measured_cost() const;
  /// Whether the period is final (not still in warm-up, calibration or verification).
  bool decided() const noexcept { return state_ == State::kDecided; }
  /// One line for the profile's collector list ("torch-op-sampling").
  std::string describe() const;

 private:
  enum class State : std::uint8_t { kWarmup, kCalibrate, kVerify, kDecided };
  void record(bool observed, std::int64_t wall_ns, std::uint64_t ops);
  bool decide_after_warmup();
  void decide_after_calibration();
  /// kVerify, at the iteration `k` that begins now: takes the cost again when due.
  void verify(std::uint64_t k);
  int period_for(double cost) const;

  SamplerOptions opt_;
  State state_ = State::kWarmup;
  bool observing_ = true;  // ops observed in the open iteration
  int period_ = 0;
  std::uint64_t iterations_ = 0, observed_ = 0;
  std::uint64_t decided_at_ = 0;  // iteration index the period counts from
  double density_ = -1;           // estimated share of the op cost (warm-up)
  std::vector<std::int64_t> on_walls_, off_walls_;  // bounded samples
  std::vector<double> densities_;
  std::vector<double> pair_ratios_;  // calibration: observed wall / the unobserved one before
  std::int64_t pair_wall_ = 0;     // calibration / verification: the pair's first wall, if any
  bool pair_observed_ = false;     // ...and whether it was observed
  bool pair_flip_ = false;         // calibration: this pair runs observed, then unobserved
  std::uint64_t block_pick_ = 0;   // sampling / verification: the offset drawn for this block
  std::uint64_t rng_ = 0x9E3779B97F4A7C15ull;
  std::uint64_t next_random();
  /// The offset in [0, n) drawn for the block that `j` (iterations since the schedule began)
  /// falls in, drawn at the block's first iteration.
  std::uint64_t pick_in_block(std::uint64_t j, std::uint64_t n);
  std::size_t next_check_ = 0;  // kVerify: pairs at which the cost is taken again
  double calibrated_cost_ = -1;
};

}  // namespace gnnprof::instrument
